"""Where the scheduler's decisions go: binds, nominations, evictions, explanations.

`ClusterWriter` is the narrow boundary the scheduler writes through. The
in-memory implementation (`InMemoryCluster`) keeps pods and nodes in dicts,
applies binds at once (or fails them on request) and deletes evicted pods
after their grace period on its clock — the tests and the benchmark use it.
`ApiClusterWriter` writes the same things through the control-plane
`ApiClient`: a bind is the API server's pods/binding subresource when the
client offers it (`bind`), and concurrent binds are coalesced into one
batched call (`_BindBatcher`, a client-side group commit: while one call is
in flight the next binds queue up and go together); with a client without
it, a merge patch of spec.nodeName. Writers never call back into the scheduler; whoever
watches (informers, or `InMemoryCluster.drain_events`) feeds changes back.
"""

from __future__ import annotations

import copy
import datetime as dt
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

from controlplane.client.apiclient import Binding
from controlplane.client.interface import ApiClient, DeleteOptions
from controlplane.scheduler.types import Clock, RealClock

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


def _key(pod: Obj) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


class InMemoryCluster:
    """Pods and nodes in dicts; records every write; events queue up for the scheduler."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or RealClock()
        self.lock = threading.Lock()
        self.pods: dict[str, Obj] = {}
        self.nodes: dict[str, Obj] = {}
        self.events: list[tuple[str, str, Obj]] = []  # (kind, type, object) for the scheduler
        self.binds: list[tuple[str, str]] = []
        self.fail_binds: set[str] = set()  # pod keys whose bind fails
        self.terminating: dict[str, float] = {}  # pod key -> deletion deadline
        self.messages: dict[str, str] = {}
        self.record_events = True

    def _emit(self, kind: str, type_: str, obj: Obj) -> None:
        if self.record_events:
            self.events.append((kind, type_, obj))

    def add_node(self, node: Obj) -> None:
        with self.lock:
            self.nodes[node["metadata"]["name"]] = node
            self._emit("Node", "ADDED", node)

    def delete_node(self, name: str) -> None:
        with self.lock:
            node = self.nodes.pop(name, None)
            if node is not None:
                self._emit("Node", "DELETED", node)

    def add_pod(self, pod: Obj) -> None:
        with self.lock:
            self.pods[_key(pod)] = pod
            self._emit("Pod", "ADDED", pod)

    def delete_pod(self, key: str) -> None:
        with self.lock:
            pod = self.pods.pop(key, None)
            self.terminating.pop(key, None)
            if pod is not None:
                self._emit("Pod", "DELETED", pod)

    def drain_events(self) -> list[tuple[str, str, Obj]]:
        with self.lock:
            out, self.events = self.events, []
            return out

    def advance(self) -> None:
        """Delete the terminating pods whose grace period has ended."""
        now = self.clock.now()
        for key, deadline in list(self.terminating.items()):
            if deadline <= now:
                self.delete_pod(key)

    # ---- ClusterWriter ----------------------------------------------------

    def bind(self, pod: Obj, node: str, annotations: dict[str, str] | None = None) -> None:
        key = _key(pod)
        with self.lock:
            if key in self.fail_binds:
                raise BindError(f"bind of {key} refused")
            if node not in self.nodes:
                raise BindError(f'node "{node}" not found')
            current = self.pods.get(key)
            if current is None:
                raise BindError(f'pod "{key}" not found')
            bound = copy.copy(current)
            bound["spec"] = dict(current.get("spec") or {}, nodeName=node)
            if annotations:
                meta = dict(current.get("metadata") or {})
                meta["annotations"] = dict(meta.get("annotations") or {}, **annotations)
                bound["metadata"] = meta
            self.pods[key] = bound
            self.binds.append((key, node))
            self._emit("Pod", "MODIFIED", bound)

    def bind_many(
        self, items: list[tuple[Obj, str, dict[str, str] | None]]
    ) -> list[BindError | None]:
        """`bind` of each (pod, node, annotations); per item None or its error."""
        return bind_each(self.bind, items)

    def set_nominated_node(self, pod: Obj, node: str) -> None:
        key = _key(pod)
        with self.lock:
            current = self.pods.get(key)
            if current is not None:
                status = dict(current.get("status") or {}, nominatedNodeName=node)
                self.pods[key] = dict(current, status=status)

    def evict(self, pod: Obj, grace_seconds: int) -> None:
        key = _key(pod)
        with self.lock:
            current = self.pods.get(key)
            if current is None:
                return
            meta = dict(current.get("metadata") or {})
            meta["deletionTimestamp"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            meta["deletionGracePeriodSeconds"] = grace_seconds
            updated = dict(current, metadata=meta)
            self.pods[key] = updated
            self.terminating[key] = self.clock.now() + grace_seconds
            self._emit("Pod", "MODIFIED", updated)
        if grace_seconds <= 0:
            self.delete_pod(key)

    def report_unschedulable(self, pod: Obj, message: str) -> None:
        with self.lock:
            self.messages[_key(pod)] = message


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

    def __init__(self, client: ApiClient, component: str = "default-scheduler") -> None:
        self.client = client
        self.component = component
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
            out.extend(BindError(str(r)) if isinstance(r, Exception) else None for r in results)
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
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
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
