"""The batch scheduler as a control-plane component: informers in, leader-elected sessions.

`component(conf_path)` is the `skiff controlplane` component hook, beside the
default scheduler's: it campaigns for the `kube-system/volcano` Lease (its
own, so the two schedulers lead independently) and, while leading, runs a
`BatchService`: shared informers for Pods, Nodes, PodGroups, Queues,
PriorityClasses and the storage kinds (claims, volumes, classes) feeding a
`BatchScheduler`'s cache, and a session whenever something
changed (at least every second). Writes go through the API client: binds in
batches, evictions, PodGroup and Queue status, and the volume plugins'
claimRefs and selected nodes.

A term builds its `BatchService` only once a Pod or a PodGroup exists
(wake.py): until then it watches those and the Queues alone, and neither
the scheduler nor NumPy is loaded. Meanwhile it writes the status a session
would write of a Queue with nothing in it (queuestatus.py), so a Queue reads
the same whether the scheduler has woken or not.

The configuration is Volcano's volcano-scheduler.conf, from the file given
with `--config` (or vc-scheduler's `--scheduler-conf`; `skiff controlplane
--volcano-scheduler-config` passes it on), else from the file named by
`$SKIFF_VOLCANO_CONFIG` (the older way, kept as a fallback), else conf.py's
default; a bad file refuses to start, naming the line (a file's actions and
plugins are checked against the registry; the default needs no check).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from controlplane.api import volcano
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
from controlplane.scheduler.batch import conf as batch_conf
from controlplane.scheduler.batch import metrics as batch_metrics
from controlplane.scheduler.batch.queuestatus import idle_status
from controlplane.scheduler.binder import ApiClusterWriter
from controlplane.scheduler.volume_state import watch_storage
from controlplane.scheduler.wake import wait_for_work
from machinery import rfc3339

if TYPE_CHECKING:
    from controlplane.scheduler.batch.scheduler import BatchScheduler

log = logging.getLogger("skiff.scheduler.batch")
Obj = dict[str, Any]
# The batch scheduler's --secure-port: vc-scheduler has none (its metrics are
# plain HTTP on :8080), so skiff's choice, beside kube-scheduler's 10259.
SECURE_PORT = 10260
CONFIG_ENV = "SKIFF_VOLCANO_CONFIG"


def load_conf(path: str | None = None) -> batch_conf.Conf:
    """The configuration in `path` (--config), else in $SKIFF_VOLCANO_CONFIG's file."""
    found = config_file(path, CONFIG_ENV)
    if found is None:
        return batch_conf.validate(batch_conf.load(batch_conf.DEFAULT_CONF))
    from controlplane.scheduler.batch import builtin  # NumPy: not at rest

    try:
        return builtin.load(found[1])
    except batch_conf.ConfError as e:
        raise batch_conf.ConfError(f"{found[0]}: {e}") from e


class ApiBatchWriter:
    """Binds (batched), evictions and status merges through the API client."""

    def __init__(self, client: ApiClient) -> None:
        self.client = client
        self.pods = ApiClusterWriter(client, component=volcano.SCHEDULER_NAME)

    def bind_many(
        self, items: list[tuple[Obj, str, dict[str, str] | None]]
    ) -> list[Exception | None]:
        return list(self.pods.bind_many(items))

    def evict(self, pod: Obj, grace_seconds: int) -> None:
        self.pods.evict(pod, grace_seconds)

    def write_status(self, kind: str, obj: Obj, status: Obj) -> None:
        meta = obj["metadata"]
        self.client.patch(kind, meta["name"], {"status": status}, meta.get("namespace"), "status")

    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        """A core/v1 Event from `volcano` (Volcano's scheduler's source) about `obj`."""
        meta = obj.get("metadata") or {}
        ns = str(meta.get("namespace") or "default")
        now = rfc3339.now()
        body = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{meta.get('name', 'object')}.", "namespace": ns},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion", ""), "kind": obj.get("kind", ""),
                "name": meta.get("name", ""), "namespace": ns, "uid": meta.get("uid", ""),
            },
            "reason": reason, "message": message, "type": type_,
            "source": {"component": volcano.SCHEDULER_NAME},
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        }  # fmt: skip
        try:
            self.client.create("Event", body, ns)
        except Exception as err:  # events are best effort
            log.debug("could not record event %s: %s", reason, err)


class IdleQueues:
    """While the scheduler sleeps: each Queue's status as a session would
    write it with no PodGroup and no pod, written when it reads otherwise."""

    def __init__(self, writer: ApiBatchWriter, factory: SharedInformerFactory) -> None:
        self.writer = writer
        self.changed = threading.Event()
        self.informer = factory.informer_for("Queue")
        self.handler = self.informer.add_event_handler(
            lambda q: self.changed.set(), lambda old, new: self.changed.set()
        )

    def __enter__(self) -> IdleQueues:
        return self

    def __exit__(self, *exc: object) -> None:
        self.informer.remove_event_handler(self.handler)

    def report(self) -> None:
        """Write the idle status of every Queue that changed and reads otherwise."""
        if not self.changed.is_set():
            return
        self.changed.clear()
        want = idle_status()
        for queue in self.informer.store.list():
            have = queue.get("status") or {}
            if all(have.get(k) == v for k, v in want.items()):
                continue
            try:
                self.writer.write_status("Queue", queue, want)
            except Exception as err:  # tried again at the next look
                log.warning("status of Queue %s: %s", queue["metadata"]["name"], err)
                self.changed.set()


class BatchService:
    """One term of batch scheduling."""

    def __init__(
        self,
        client: ApiClient,
        conf: batch_conf.Conf,
        metrics: batch_metrics.BatchMetrics | None = None,
        factory: SharedInformerFactory | None = None,
    ) -> None:
        """`factory`: informers already started (wait_for_work's), to subscribe to."""
        from controlplane.scheduler.batch.scheduler import BatchScheduler  # NumPy: not at rest

        self.scheduler: BatchScheduler = BatchScheduler(
            conf, ApiBatchWriter(client), status_writers=8, volume_binders=4,
            background_binds=True,
        )  # fmt: skip
        if metrics is not None:
            self.scheduler.on_session = metrics.session
        self.factory = factory or SharedInformerFactory(client)
        s = self.scheduler.cache
        # Claims, volumes and classes for the volume plugins, which write through the client.
        watch_storage(self.factory, client, s.volumes, s.on_storage)
        for kind, handler in (
            ("Node", s.on_node),
            ("Pod", s.on_pod),
            ("PodGroup", s.on_pod_group),
            ("Queue", s.on_queue),
            ("PriorityClass", s.on_priority_class),
        ):
            self._subscribe(kind, handler)

    def _subscribe(self, kind: str, handler: Callable[..., None]) -> None:
        def update(old: Obj, new: Obj) -> None:
            handler(new)

        def delete(obj: Obj) -> None:
            handler(obj, deleted=True)

        self.factory.informer_for(kind).add_event_handler(handler, update, delete)

    def run(self, stop: threading.Event, sync_timeout: float = 60.0) -> None:
        self.factory.start()
        try:
            if not self.factory.wait_for_cache_sync(sync_timeout):
                log.error("batch scheduler: informers did not sync within %ss", sync_timeout)
            self.scheduler.run(stop)
        finally:
            self.factory.shutdown()
            self.scheduler.close()


def run(
    client: ApiClient,
    stop: threading.Event,
    conf: batch_conf.Conf,
    metrics: batch_metrics.BatchMetrics | None = None,
) -> None:
    """Campaign for the `volcano` lease until `stop`; schedule while leading,
    reporting to `metrics` (None: the process's, batch_metrics.for_process())."""
    found = metrics or batch_metrics.for_process()

    def serve(done: threading.Event) -> None:
        factory = SharedInformerFactory(client)
        try:
            with IdleQueues(ApiBatchWriter(client), factory) as idle:
                if not wait_for_work(factory, ("Pod", "PodGroup"), done, idle.report):
                    return
            service = BatchService(client, conf, found, factory)
        except BaseException:
            factory.shutdown()
            raise
        service.run(done)

    serve_while_leading(client, stop, "volcano", serve)


def component(
    conf_path: str | None = None,
    metrics_listen: str = "",
    secure: SecureServingOptions | None = None,
) -> Callable[[ApiClient, threading.Event], threading.Thread]:
    """The component hook of a batch scheduler configured by the file
    `conf_path` (see load_conf; a bad one refuses to start, naming the line),
    its /metrics served on `metrics_listen` (HOST:PORT) if given, and on its
    secure port with `secure`."""
    found = batch_metrics.BatchMetrics()  # this component's own, whatever else runs here

    def run_reporting(client: ApiClient, stop: threading.Event, conf: batch_conf.Conf) -> None:
        run(client, stop, conf, found)

    start = in_background("volcano-scheduler", run_reporting, lambda: load_conf(conf_path))
    start = with_metrics(start, lambda: found.registry, metrics_listen)
    return with_secure_serving(start, lambda: found.registry, secure)


ALONE = ConfiguredComponent(
    prog="batch scheduler",
    thread="volcano-scheduler",
    field_manager="vc-scheduler",
    kubeconfig_help="the batch scheduler's kubeconfig (volcano-scheduler.conf)",
    config_flags=("--config", "--scheduler-conf"),  # vc-scheduler's name
    config_help=f"volcano-scheduler.conf (fallback: ${CONFIG_ENV})",
    load=load_conf,
    run=run,
    metrics=lambda: batch_metrics.for_process().registry,
    secure_port=SECURE_PORT,
)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m controlplane.scheduler.batch.run --kubeconfig FILE`: the batch
    scheduler alone, with its own identity (`<data-dir>/volcano-scheduler.conf`)."""
    return ALONE.main("controlplane.scheduler.batch.run", argv)


if __name__ == "__main__":
    raise SystemExit(main())
