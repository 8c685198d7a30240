"""The scheduler as a control-plane component: informers in, leader-elected loop, API writes out.

`component(config_path)` is the `skiff controlplane` component hook (see
controlplane/main.py COMPONENTS): it starts a thread that campaigns for the
`kube-system/skiff-scheduler` Lease and, while leading, runs a
`SchedulerService` — shared informers for Pods, Nodes, PodGroups and the
storage kinds (claims, volumes, classes) feeding the scheduler's handlers, the scheduling loop, binds on a thread pool through
`ApiClusterWriter`. Losing the lease stops the service; a new term starts a
fresh one (fresh cache, relisted state). A term builds its service only once
a Pod exists (wake.py): until then it watches Pods alone, and neither the
scheduler nor NumPy is loaded.

The profile configuration (YAML, see config.py) comes from the file given
with `--config` (kube-scheduler's flag; `skiff controlplane
--scheduler-config` passes it on), else from the file named by
`$SKIFF_SCHEDULER_CONFIG` (the older way, kept as a fallback), else the
defaults; a bad file refuses to start with the reason (its profiles' plugins
are built once to check them; the defaults need no check).

Alone, against a running API server:

    python -m controlplane.scheduler.run --kubeconfig scheduler.conf [--config profiles.yaml]
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from controlplane.client.component import (
    ConfiguredComponent,
    config_file,
    in_background,
    with_metrics,
    with_secure_serving,
)
from controlplane.client.informer import SharedInformerFactory
from controlplane.client.interface import ApiClient
from controlplane.client.leaderelection import serve_while_leading
from controlplane.client.secureserving import SecureServingOptions
from controlplane.scheduler import config as sched_config
from controlplane.scheduler import metrics as sched_metrics
from controlplane.scheduler.binder import ApiClusterWriter, BindError, ThreadExecutor
from controlplane.scheduler.volume_state import watch_storage
from controlplane.scheduler.wake import wait_for_work

if TYPE_CHECKING:
    from controlplane.scheduler.scheduler import Scheduler

log = logging.getLogger("skiff.scheduler")
Obj = dict[str, Any]
SECURE_PORT = 10259  # kube-scheduler's --secure-port
CONFIG_ENV = "SKIFF_SCHEDULER_CONFIG"


def load_config(path: str | None = None) -> sched_config.SchedulerConfig:
    """The profiles in `path` (--config), else in $SKIFF_SCHEDULER_CONFIG's file."""
    found = config_file(path, CONFIG_ENV)
    return sched_config.parse(None) if found is None else sched_config.load(found[1])


class _NoWriter:
    """A writer for a scheduler built only to check its configuration."""

    def bind(self, pod: Obj, node: str, annotations: dict[str, str] | None = None) -> None:
        raise BindError("not running")

    def set_nominated_node(self, pod: Obj, node: str) -> None: ...

    def evict(self, pod: Obj, grace_seconds: int) -> None: ...

    def report_unschedulable(self, pod: Obj, message: str) -> None: ...


def check(cfg: sched_config.SchedulerConfig) -> None:
    """Build every profile's plugins once: a factory refusing its args raises ConfigError."""
    from controlplane.scheduler.scheduler import from_config  # NumPy: not at rest

    from_config(cfg, _NoWriter())


class SchedulerService:
    """One term of scheduling: informers, the loop, a bind pool."""

    def __init__(
        self,
        client: ApiClient,
        cfg: sched_config.SchedulerConfig | None = None,
        bind_workers: int = 16,
        metrics: sched_metrics.SchedulerMetrics | None = None,
        factory: SharedInformerFactory | None = None,
    ) -> None:
        """`factory`: informers already started (wait_for_work's), to subscribe to."""
        from controlplane.scheduler.scheduler import from_config  # NumPy: not at rest

        self.client = client
        self.executor = ThreadExecutor(bind_workers)
        # Binding cycles of DefaultBinder-only profiles go in batches (a few
        # Bind calls in flight); others (PreBind or custom Bind plugins) on the pool.
        self.scheduler: Scheduler = from_config(
            cfg or sched_config.parse(None),
            ApiClusterWriter(client),
            executor=self.executor,
            bind_batch_threads=3,
            metrics=metrics,
        )
        self.factory = factory or SharedInformerFactory(client)
        s = self.scheduler
        self.factory.informer_for("Node").add_event_handler(
            s.on_node_add, lambda old, new: s.on_node_update(new), s.on_node_delete
        )
        self.factory.informer_for("Pod").add_event_handler(
            s.on_pod_add, lambda old, new: s.on_pod_update(new, old), s.on_pod_delete
        )
        # spec.priority is normally set at admission; this covers pods created without it.
        classes = s.priority_classes

        def set_class(pc: Obj) -> None:
            classes[pc["metadata"]["name"]] = int(pc.get("value", 0))

        def drop_class(pc: Obj) -> None:
            classes.pop(pc["metadata"]["name"], None)

        self.factory.informer_for("PriorityClass").add_event_handler(
            set_class, lambda old, new: set_class(new), drop_class
        )
        # Preemption prefers victims whose budgets allow a disruption.
        self.factory.informer_for("PodDisruptionBudget").add_event_handler(
            s.on_disruption_budget,
            lambda old, new: s.on_disruption_budget(new),
            lambda obj: s.on_disruption_budget(obj, deleted=True),
        )
        self.factory.informer_for("PodGroup").add_event_handler(
            s.on_pod_group,
            lambda old, new: s.on_pod_group(new),
            lambda obj: s.on_pod_group(obj, deleted=True),
        )
        # Claims, volumes and classes for the volume plugins, which write through the client.
        watch_storage(self.factory, client, s.volumes, s.on_storage)

    def run(self, stop: threading.Event, sync_timeout: float = 60.0) -> None:
        """Sync the informers, then schedule until `stop` is set."""
        self.factory.start()
        try:
            if not self.factory.wait_for_cache_sync(sync_timeout):
                log.error("scheduler: informers did not sync within %ss", sync_timeout)
            self.scheduler.run(stop)
        finally:
            self.scheduler.queue.close()
            self.factory.shutdown()
            self.scheduler.shutdown_binds()
            self.executor.shutdown()


def run(
    client: ApiClient,
    stop: threading.Event,
    cfg: sched_config.SchedulerConfig | None = None,
    metrics: sched_metrics.SchedulerMetrics | None = None,
) -> None:
    """Campaign for the lease until `stop`; schedule while leading, reporting
    to `metrics` (None: the process's, sched_metrics.for_process())."""
    cfg = cfg or load_config()
    found = metrics or sched_metrics.for_process()

    def serve(done: threading.Event) -> None:
        factory = SharedInformerFactory(client)
        try:
            if not wait_for_work(factory, ("Pod",), done):
                return
            service = SchedulerService(client, cfg, metrics=found, factory=factory)
        except BaseException:
            factory.shutdown()
            raise
        service.run(done)

    serve_while_leading(client, stop, "skiff-scheduler", serve)


def checked(path: str | None = None) -> sched_config.SchedulerConfig:
    """load_config(path), every profile's plugins built once to check it (the
    defaults, with no file, are not: they build, and building loads NumPy)."""
    found = config_file(path, CONFIG_ENV)
    if found is None:
        return sched_config.parse(None)
    cfg = sched_config.load(found[1])
    check(cfg)
    return cfg


def component(
    config_path: str | None = None,
    metrics_listen: str = "",
    secure: SecureServingOptions | None = None,
) -> Callable[[ApiClient, threading.Event], threading.Thread]:
    """The component hook of a scheduler configured by the file `config_path`
    (see load_config; a bad profile refuses to start, with the reason), its
    /metrics served on `metrics_listen` (HOST:PORT) if given, and on its
    secure port with `secure`."""
    found = sched_metrics.SchedulerMetrics()  # this component's own, whatever else runs here

    def run_reporting(client: ApiClient, stop: threading.Event, cfg: Any) -> None:
        run(client, stop, cfg, found)

    start = in_background("scheduler", run_reporting, lambda: checked(config_path))
    start = with_metrics(start, lambda: found.registry, metrics_listen)
    return with_secure_serving(start, lambda: found.registry, secure)


ALONE = ConfiguredComponent(
    prog="scheduler",
    thread="scheduler",
    field_manager="kube-scheduler",
    kubeconfig_help="the scheduler's kubeconfig (skiff controlplane writes <data-dir>/scheduler.conf)",
    config_flags=("--config",),
    config_help=f"scheduler profiles YAML (fallback: ${CONFIG_ENV})",
    load=checked,
    run=run,
    metrics=lambda: sched_metrics.for_process().registry,
    secure_port=SECURE_PORT,
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the scheduler alone against an API server until SIGINT/SIGTERM."""
    return ALONE.main("controlplane.scheduler.run", argv)


if __name__ == "__main__":
    raise SystemExit(main())
