"""The controller manager: start controllers by name over shared informers.

`REGISTRY` maps each controller's name (kube-controller-manager's names) to
its init function; `--controllers` selects them as Kubernetes does: `*`
means every controller not disabled by default, `name` enables one, `-name`
disables one, and the first match for a name wins. `ControllerManager`
builds one `ControllerContext` (client, shared informer factory, clock,
config, metrics source), calls the init function of every enabled
controller, starts the informers, waits for their caches, then starts each
controller's workers. With `leader_elect`, all of that happens only while
this process holds the Lease, so two managers on one store never both act;
losing the lease stops the controllers.

It exposes `healthy()`, `metrics()` (per controller: reconcile count,
latency, errors, panics) and `metrics_text()`: client-go's workqueue series
per controller in the Prometheus text format (controllers/metrics.py); `serve(address)` publishes /healthz and /metrics over HTTP on the
given loopback address. A panic in a reconcile never reaches here: each
controller catches, logs and re-queues with backoff (`base.Controller`).
The manager never imports the API server or storage.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import socket
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from controlplane.client.component import open_secure_port
from controlplane.client.informer import SharedInformerFactory
from controlplane.client.interface import ApiClient
from controlplane.client.leaderelection import Callbacks, LeaderElectionConfig, LeaderElector
from controlplane.client.secureserving import SecureServingOptions
from controlplane.controllers.base import Controller, ControllerContext
from controlplane.controllers.config import (
    ManagerConfig,
    add_flags,
    config_from_args,
    is_enabled,
    parse_controllers,
)
from controlplane.controllers.metrics import ManagerMetrics
from machinery.clock import Clock, RealClock
from machinery.metrics import CONTENT_TYPE
from machinery.metrics import render as metrics_render

SECURE_PORT = 10257  # kube-controller-manager's --secure-port

log = logging.getLogger(__name__)

InitFunc = Callable[[ControllerContext], Controller | None]


def _registry() -> dict[str, InitFunc]:
    from controlplane.controllers import (
        apfconfig,
        clusterroleaggregation,
        cronjob,
        csrapproving,
        csrcleaner,
        csrsigning,
        daemonset,
        deployment,
        disruption,
        endpoints,
        endpointslice,
        endpointslicemirroring,
        garbagecollector,
        hpa,
        ingress,
        job,
        namespace,
        nodeipam,
        nodelifecycle,
        persistentvolume,
        podgc,
        podgroup,
        replicaset,
        replicationcontroller,
        resourcequota,
        serviceaccount,
        servicelb,
        statefulset,
        vcjob,
        vcqueue,
        volume_protection,
    )

    return {
        "replicaset": replicaset.init,
        "replicationcontroller": replicationcontroller.init,
        "resourcequota": resourcequota.init,
        "disruption": disruption.init,
        "deployment": deployment.init,
        "statefulset": statefulset.init,
        "daemonset": daemonset.init,
        "job": job.init,
        "cronjob": cronjob.init,
        "horizontalpodautoscaling": hpa.init,
        "nodelifecycle": nodelifecycle.init,
        "nodeipam": nodeipam.init,
        "endpoint": endpoints.init,
        "endpointslice": endpointslice.init,
        "endpointslicemirroring": endpointslicemirroring.init,
        "servicelb": servicelb.init,
        "ingress": ingress.init,
        "namespace": namespace.init,
        "garbagecollector": garbagecollector.init,
        "podgc": podgc.init,
        "persistentvolume-binder": persistentvolume.init,
        "pvc-protection": volume_protection.init_pvc,
        "pv-protection": volume_protection.init_pv,
        "clusterrole-aggregation": clusterroleaggregation.init,
        "apf-configuration": apfconfig.init,
        "serviceaccount": serviceaccount.init,
        "root-ca-cert-publisher": serviceaccount.init_root_ca,
        "csrsigning": csrsigning.init,
        "csrapproving": csrapproving.init,
        "csrcleaner": csrcleaner.init,
        "volcano-job": vcjob.init,
        "volcano-podgroup": podgroup.init,
        "volcano-queue": vcqueue.init,
    }


REGISTRY: dict[str, InitFunc] = _registry()


class ControllerManager:
    def __init__(
        self,
        client: ApiClient,
        config: ManagerConfig | None = None,
        clock: Clock | None = None,
        metrics_source: object | None = None,
        registry: Mapping[str, InitFunc] | None = None,
    ) -> None:
        self.client = client
        self.config = config or ManagerConfig()
        self.clock: Clock = clock or RealClock()
        self.registry = dict(registry if registry is not None else REGISTRY)
        if metrics_source is None:
            from controlplane.controllers.hpa import InMemoryMetrics

            metrics_source = InMemoryMetrics()
        self.metrics_source = metrics_source
        parse_controllers(self.config.controllers, self.registry)
        self.controllers: dict[str, Controller] = {}
        self.prom = ManagerMetrics(self._depths, self.is_leader)
        self.context: ControllerContext | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._running = threading.Event()
        self._elector: LeaderElector | None = None
        self._thread: threading.Thread | None = None
        self._http: ThreadingHTTPServer | None = None

    def enabled(self) -> list[str]:
        return [n for n in self.registry if is_enabled(n, self.config.controllers)]

    # ---- lifecycle -------------------------------------------------------------

    def start_controllers(
        self, sync_timeout: float = 30.0, lost: threading.Event | None = None
    ) -> None:
        """Init every enabled controller, start informers, wait for caches, start
        workers; not the workers once `lost` is set (leadership ended, or the
        manager stopped, while the caches synced): the informers stop again."""
        informers = SharedInformerFactory(
            self.client, resync_period=self.config.resync_period, clock=self.clock
        )
        ctx = ControllerContext(
            self.client, informers, self.clock, self.config, self.metrics_source
        )
        started: dict[str, Controller] = {}
        for name in self.enabled():
            try:
                ctrl = self.registry[name](ctx)
            except Exception:
                log.exception("controller %s failed to initialise; skipping it", name)
                continue
            if ctrl is None:
                log.info("controller %s chose not to start", name)
                continue
            ctrl.queue.observer = self.prom.observer(name)
            started[name] = ctrl
        informers.start()
        if not informers.wait_for_cache_sync(sync_timeout):
            log.warning("informer caches did not sync within %.0fs; starting anyway", sync_timeout)
        # Published before the workers start: whatever a worker writes (pods
        # of a ReplicaSet) may be seen by someone who then reads our metrics.
        # Under the lock stop_controllers swaps them out with: a term that
        # ended before (on_stopped_leading found nothing to stop) starts none.
        with self._lock:
            ended = lost is not None and lost.is_set()
            if not ended:
                self.context = ctx
                self.controllers = started
                for ctrl in started.values():
                    ctrl.run()
                self._running.set()
        if ended:
            informers.shutdown(2.0)
            log.info("leadership ended while the controllers started: not started")
            return
        log.info("controllers started: %s", ", ".join(sorted(started)))

    def stop_controllers(self) -> None:
        with self._lock:
            ctrls, self.controllers = self.controllers, {}
            ctx, self.context = self.context, None
            self._running.clear()
        if ctx is not None:
            ctx.informers.shutdown(2.0)
        for ctrl in ctrls.values():
            ctrl.shutdown(2.0)
        if ctx is not None and ctx.executor is not None:
            ctx.executor.shutdown(wait=False, cancel_futures=True)

    def run(self) -> None:
        """Run until `stop()`: with leader election, only while leading. Blocks."""
        if not self.config.leader_elect:
            self.start_controllers()
            self._stop.wait()
            self.stop_controllers()
            return
        identity = self.config.leader_elect_identity or f"{socket.gethostname()}_{os.getpid()}"
        le_config = LeaderElectionConfig(
            name=self.config.leader_elect_name,
            namespace=self.config.leader_elect_namespace,
            identity=identity,
            lease_duration=self.config.lease_duration,
            renew_deadline=self.config.renew_deadline,
            retry_period=self.config.retry_period,
        )

        def lead(lost: threading.Event) -> None:
            self.start_controllers(lost=lost)
            lost.wait()

        self._elector = LeaderElector(
            self.client,
            le_config,
            Callbacks(on_started_leading=lead, on_stopped_leading=self.stop_controllers),
            clock=self.clock,
        )
        while not self._stop.is_set():
            self._elector.run(self._stop)

    def start(self) -> None:
        """`run()` on a background thread."""
        self._thread = threading.Thread(target=self.run, name="controller-manager", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
        self.stop_controllers()

    def wait_running(self, timeout: float = 30.0) -> bool:
        return self._running.wait(timeout)

    def is_leader(self) -> bool:
        if not self.config.leader_elect:
            return True
        return self._elector is not None and self._elector.is_leader()

    # ---- health and metrics ------------------------------------------------

    def healthy(self) -> bool:
        """Healthy when not running controllers on purpose (standby) or every
        controller's informers have synced."""
        with self._lock:
            ctrls = list(self.controllers.values())
        return all(c.has_synced() for c in ctrls)

    def metrics(self) -> dict[str, dict[str, float]]:
        with self._lock:
            ctrls = dict(self.controllers)
        return {name: c.metrics_snapshot() for name, c in sorted(ctrls.items())}

    def metrics_text(self) -> str:
        """The workqueue series of every controller (controllers/metrics.py)."""
        return metrics_render(self.prom.registry).decode()

    def _depths(self) -> dict[str, int]:
        with self._lock:
            ctrls = dict(self.controllers)
        return {name: len(c.queue) for name, c in ctrls.items()}

    def serve(self, host: str = "127.0.0.1", port: int = 10257) -> tuple[str, int]:
        """Serve /healthz and /metrics on (host, port); returns the bound address."""
        manager = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/healthz":
                    ok = manager.healthy()
                    body = b"ok" if ok else b"informers not synced"
                    self.send_response(200 if ok else 503)
                elif self.path == "/metrics":
                    body = manager.metrics_text().encode()
                    self.send_response(200)
                    self.send_header("Content-Type", CONTENT_TYPE)
                else:
                    body = b"not found"
                    self.send_response(404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._http = ThreadingHTTPServer((host, port), Handler)
        threading.Thread(target=self._http.serve_forever, name="cm-http", daemon=True).start()
        addr = self._http.server_address
        return str(addr[0]), int(addr[1])


# ---- wiring into `skiff controlplane` -------------------------------------------


def component(
    config: ManagerConfig,
    metrics_listen: str = "",
    rest_config: Path | None = None,
    secure: SecureServingOptions | None = None,
) -> Callable[[ApiClient, threading.Event], threading.Thread]:
    """A `skiff controlplane` component function running a manager with `config`;
    `rest_config` (the kubeconfig) names the REST API the HPA reads stats from;
    with `secure`, /metrics and the health checks are on its secure port
    (kube-controller-manager's 10257). The thread it returns ends once `stop`
    is set and the manager has stopped (its Lease released)."""

    def start_component(client: ApiClient, stop: threading.Event) -> threading.Thread:
        # The HPA reads pod usage from the metrics API (metrics.k8s.io), never from agents.
        from controlplane.client.config import ClientConfig, load_config
        from controlplane.controllers.metrics_api import MetricsApiSource

        api = getattr(client, "config", None) or ClientConfig("127.0.0.1:6443")
        settings = config
        if rest_config is not None:  # the components' own client is on a gRPC-only socket
            api = load_config(rest_config)
            if not config.root_ca_pem:  # ... with no CA of its own to publish
                settings = dataclasses.replace(config, root_ca_pem=api.ca_pem)
        manager = ControllerManager(client, settings, metrics_source=MetricsApiSource(api))
        # The secure port first, as kube-controller-manager serves before it
        # campaigns: once /metrics answers anywhere, it answers there too.
        secured = None
        if secure is not None and secure.secure_port:
            secured = open_secure_port(
                client, secure, lambda: manager.metrics_text().encode(),
                lambda: "" if manager.healthy() else "informers not synced",
            )  # fmt: skip
        try:
            manager.start()
            if metrics_listen:
                host, _, port = metrics_listen.rpartition(":")
                manager.serve(host or "127.0.0.1", int(port))
        except BaseException:
            if secured is not None:
                secured.close()
            raise

        def stopper() -> None:
            stop.wait()
            manager.stop()
            if secured is not None:
                secured.close()

        thread = threading.Thread(target=stopper, name="controller-manager-stop", daemon=True)
        thread.start()
        return thread

    return start_component


def start(client: ApiClient, stop: threading.Event) -> threading.Thread:
    """The component entry point with default settings (leader-elected)."""
    return component(ManagerConfig(leader_elect=True))(client, stop)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m controlplane.controllers.manager --kubeconfig FILE [flags]`: the
    controller manager alone, with its own identity (`<data-dir>/controller-manager.conf`;
    the HPA reads node stats through the REST API that file names)."""
    from controlplane.client import secureserving
    from controlplane.client.component import run_component

    parser = argparse.ArgumentParser(prog="python -m controlplane.controllers.manager")
    parser.add_argument("--kubeconfig", required=True,
                        help="the controller manager's kubeconfig (controller-manager.conf)")  # fmt: skip
    parser.add_argument("--log-level", default=os.environ.get("SKIFF_LOG_LEVEL", "INFO"))
    add_flags(parser)
    secureserving.add_flags(parser, SECURE_PORT)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    try:
        config = config_from_args(args)
        secure = secureserving.options_from_args(args)
    except ValueError as err:
        print(f"controller manager: refusing to start: {err}", file=sys.stderr)
        return 2
    start = component(config, args.controller_metrics_listen, Path(args.kubeconfig), secure)
    return run_component("controller manager", args.kubeconfig, start, "kube-controller-manager")


if __name__ == "__main__":
    raise SystemExit(main())
