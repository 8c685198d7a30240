"""Where the scheduler's decisions go: binds, nominations, evictions, explanations.

`ClusterWriter` is the narrow boundary the scheduler writes through (an
in-memory one for tests and the benchmark lives in tests/fakes).
`ApiClusterWriter` writes the same things through the control-plane
`ApiClient`: a bind is the API server's pods/binding subresource when the
client offers it (`bind`), and concurrent binds are coalesced into one
batched call (`_BindBatcher`, a client-side group commit: while one call is
in flight the next binds queue up and go together); with a client without
it, a merge patch of spec.nodeName. Writers never call back into the scheduler; whoever
watches (informers) feeds changes back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

from controlplane.client.apiclient import Binding
from controlplane.client.interface import ApiClient, DeleteOptions
from controlplane.scheduler.types import Clock, RealClock
from machinery import rfc3339

Obj = dict[str, Any]


class BindError(Exception):
    """The bind did not happen (node gone, conflict, transport error)."""


class ClusterWriter(Protocol):
    def bind(self, pod: Obj, node: str, annotations: dict[str, str] | None = None) -> None:
        """Bind `pod` to `node` (adding `annotations`); raise BindError when it cannot."""
        ...

    def set_nominated_node(self, pod: Obj, node: str) -> None: ...

    def evict(self, pod: Obj, grace_seconds: int) -> None:
        """Delete a preemption victim, giving it its graceful termination period."""
        ...

    def report_unschedulable(self, pod: Obj, message: str) -> None:
        """PodScheduled=False/Unschedulable condition and a FailedScheduling event."""
        ...


class Executor(Protocol):
    def submit(self, fn: Callable[[], None]) -> None: ...


class InlineExecutor:
    """Runs binding cycles at once, in the caller's thread (tests, benchmark)."""

    def submit(self, fn: Callable[[], None]) -> None:
        fn()


class ThreadExecutor:
    """Runs binding cycles on a small thread pool, as kube-scheduler's goroutines."""

    def __init__(self, workers: int = 8) -> None:
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bind")

    def submit(self, fn: Callable[[], None]) -> None:
        self.pool.submit(fn)

    def shutdown(self) -> None:
        self.pool.shutdown(wait=True)


def _refused(cause: Exception) -> BindError:
    """The BindError of one refused binding, its API error kept as the cause."""
    err = BindError(str(cause))
    err.__cause__ = cause
    return err


def bind_each(
    bind: Callable[[Obj, str, dict[str, str] | None], None],
    items: list[tuple[Obj, str, dict[str, str] | None]],
) -> list[BindError | None]:
    """`bind` of each (pod, node, annotations), one call each; per item None or its error."""
    out: list[BindError | None] = []
    for pod, node, extra in items:
        try:
            bind(pod, node, extra)
            out.append(None)
        except BindError as e:
            out.append(e)
    return out


class _BindBatcher:
    """Sends the binds of many threads in few calls: a thread that finds fewer
    than `max_calls` calls in flight sends everything queued (at most
    `max_batch` per call) until the queue is empty; the others wait for their
    own result. A few calls in flight keep the server's group commit busy while
    the next batch travels."""

    def __init__(
        self, send: Callable[[list[Binding]], list[Any]], max_batch: int = 256, max_calls: int = 3
    ) -> None:
        self._send = send
        self._max_batch = max_batch
        self._max_calls = max_calls
        self._lock = threading.Lock()
        self._pending: list[tuple[Binding, Future[None]]] = []
        self._senders = 0

    def bind(self, binding: Binding) -> None:
        future: Future[None] = Future()
        with self._lock:
            self._pending.append((binding, future))
            lead = self._senders < self._max_calls
            if lead:
                self._senders += 1
        if lead:
            self._drain()
        future.result()

    def _drain(self) -> None:
        while True:
            with self._lock:
                batch = self._pending[: self._max_batch]
                del self._pending[: self._max_batch]
                if not batch:
                    self._senders -= 1
                    return
            try:
                results = self._send([b for b, _ in batch])
                if len(results) != len(batch):
                    raise BindError(f"{len(results)} results for {len(batch)} bindings")
            except Exception as e:
                for _, future in batch:
                    future.set_exception(e if isinstance(e, BindError) else BindError(str(e)))
                continue
            for (_, future), result in zip(batch, results, strict=True):
                if isinstance(result, Exception):
                    future.set_exception(BindError(str(result)))
                else:
                    future.set_result(None)


class ApiClusterWriter:
    """The same writes through the control-plane API client."""

    def __init__(
        self, client: ApiClient, component: str = "default-scheduler", clock: Clock | None = None
    ) -> None:
        self.client = client
        self.component = component
        self.clock = clock or RealClock()
        send = getattr(client, "bind", None)
        self._batcher = _BindBatcher(send) if callable(send) else None

    def bind(self, pod: Obj, node: str, annotations: dict[str, str] | None = None) -> None:
        meta = pod["metadata"]
        if self._batcher is not None:
            ns = meta.get("namespace") or "default"
            uid = str(meta.get("uid") or "")
            self._batcher.bind(Binding(ns, meta["name"], node, uid, annotations))
            return
        patch: Obj = {"spec": {"nodeName": node}}
        if annotations:
            patch["metadata"] = {"annotations": annotations}
        try:
            self.client.patch("Pod", meta["name"], patch, meta.get("namespace") or "default")
        except Exception as e:
            raise BindError(str(e)) from e

    def bind_many(
        self, items: list[tuple[Obj, str, dict[str, str] | None]], max_batch: int = 256
    ) -> list[BindError | None]:
        """Bind each (pod, node, annotations), `max_batch` per call of the
        client's batched bind (one by one without it); per item None or its error."""
        send = getattr(self.client, "bind", None)
        if not callable(send):
            return bind_each(self.bind, items)
        out: list[BindError | None] = []
        for i in range(0, len(items), max_batch):
            chunk = [
                Binding(
                    (pod["metadata"].get("namespace") or "default"),
                    pod["metadata"]["name"],
                    node,
                    str(pod["metadata"].get("uid") or ""),
                    extra,
                )
                for pod, node, extra in items[i : i + max_batch]
            ]
            try:
                results = send(chunk)
                if len(results) != len(chunk):
                    raise BindError(f"{len(results)} results for {len(chunk)} bindings")
            except Exception as e:
                err = e if isinstance(e, BindError) else BindError(str(e))
                out.extend([err] * len(chunk))
                continue
            out.extend(_refused(r) if isinstance(r, Exception) else None for r in results)
        return out

    def set_nominated_node(self, pod: Obj, node: str) -> None:
        meta = pod["metadata"]
        self.client.patch(
            "Pod",
            meta["name"],
            {"status": {"nominatedNodeName": node}},
            meta.get("namespace") or "default",
            "status",
        )

    def evict(self, pod: Obj, grace_seconds: int) -> None:
        meta = pod["metadata"]
        self.client.delete(
            "Pod",
            meta["name"],
            meta.get("namespace") or "default",
            DeleteOptions(grace_period_seconds=grace_seconds),
        )

    def report_unschedulable(self, pod: Obj, message: str) -> None:
        meta = pod["metadata"]
        ns = meta.get("namespace") or "default"
        now = rfc3339.format_datetime(self.clock.utcnow())
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": message,
            "lastTransitionTime": now,
        }
        self.client.patch(
            "Pod", meta["name"], {"status": {"conditions": [condition]}}, ns, "status"
        )
        self.client.create(
            "Event",
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"generateName": f"{meta['name']}.", "namespace": ns},
                "involvedObject": {
                    "kind": "Pod",
                    "name": meta["name"],
                    "namespace": ns,
                    "uid": meta.get("uid", ""),
                },
                "reason": "FailedScheduling",
                "message": message,
                "type": "Warning",
                "source": {"component": self.component},
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
            },
            ns,
        )
