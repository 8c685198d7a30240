"""The batch scheduler's binder: a session's binds and evictions written to the API.

Binds go in one batch (`BindWriter.bind_many`); a pod with claims to bind or
provision first runs PreBind, one by one, from a small pool (inline when
there is none), since PreBind may wait for the PV controller. In the
component the batch is written by a thread of its own (`background`), as
Volcano's cache binds from goroutines: the session returns once its binds
are handed over, and the next session places pods while the API server
writes the last one's (the pods are assumed, so counted on their nodes,
until their bind fails or its informer event comes). A bind that
fails forgets the pod's assumed place and makes it pending again, unless it
failed because the pod is gone: deleted (NotFound), or not the pod that was
scheduled (a Conflict without retry advice: replaced by a pod of another
UID, being deleted, or bound already; its event will tell). Evictions delete each
victim with its own grace period, with an Evict event on it and on its
PodGroup.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from controlplane.client.errors import Conflict, NotFound
from controlplane.scheduler.batch.cache import BatchCache
from controlplane.scheduler.batch.statement import Eviction
from controlplane.scheduler.framework import Framework
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.types import CycleState

log = logging.getLogger("skiff.scheduler.batch")
Obj = dict[str, Any]


class BindWriter(Protocol):
    def bind_many(
        self, items: list[tuple[Obj, str, dict[str, str] | None]]
    ) -> list[Exception | None]: ...

    def evict(self, pod: Obj, grace_seconds: int) -> None: ...

    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None: ...


def gone(err: Exception | str) -> bool:
    """Whether a bind failed because the pod is gone (NotFound) or is not the
    pod that was scheduled (a Conflict without retry advice: replaced by
    another of the same name, being deleted, or bound already; its event
    will tell): nothing to retry. A Conflict the server says to retry (too
    many concurrent writers) is not."""
    e: BaseException | None = err if isinstance(err, BaseException) else None
    for _ in range(8):
        if e is None:
            return False
        if isinstance(e, NotFound) or (isinstance(e, Conflict) and not e.retry_after):
            return True
        e = e.__cause__
    return False


class Binder:
    def __init__(
        self,
        writer: BindWriter,
        cache: BatchCache,
        framework: Framework,
        volume_binders: int = 0,
        background: bool = False,
    ) -> None:
        self.writer = writer
        self.cache = cache
        self.framework = framework
        # The batches written one after another, in the sessions' order, off
        # the session's thread (None: inline, as the tests run a session).
        self._bind_thread: ThreadPoolExecutor | None = (
            ThreadPoolExecutor(1, thread_name_prefix="volcano-bind") if background else None
        )
        # Binds whose PreBind has work (claims to bind or provision, then a wait
        # for the PV controller) go one by one from this pool; None: inline.
        self._volume_pool: ThreadPoolExecutor | None = (
            ThreadPoolExecutor(volume_binders, thread_name_prefix="volcano-volumes")
            if volume_binders
            else None
        )

    def close(self) -> None:
        for pool in (self._bind_thread, self._volume_pool):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)

    def bind(self, all_binds: list[tuple[PodInfo, str]], states: Mapping[str, CycleState]) -> None:
        binds = []
        for p, node in all_binds:
            state = states.get(p.key)
            if state is not None and self.framework.pre_bind_has_work(state, p, node):
                if self._volume_pool is None:
                    self._bind_with_volumes(p, node, state)
                else:
                    self._volume_pool.submit(self._bind_with_volumes, p, node, state)
            else:
                binds.append((p, node))
        if not binds:
            return
        if self._bind_thread is None:
            self._bind_batch(binds)
        else:
            self._bind_thread.submit(self._bind_batch, binds)

    def _bind_batch(self, binds: list[tuple[PodInfo, str]]) -> None:
        try:
            results = self.writer.bind_many([(p.pod, node, None) for p, node in binds])
        except Exception as e:
            log.exception("binding %d pods failed", len(binds))
            results = [e] * len(binds)
        failed = False
        with self.cache.lock:
            done = []
            for (p, _node), err in zip(binds, results, strict=True):
                if err is None:
                    done.append(p.key)
                else:
                    failed = True
                    self._failed(p, err)
            self.cache.cluster.finish_binding_many(done)
        if failed and self._bind_thread is not None:
            self.cache.dirty.set()  # pending again: a session for them

    def _failed(self, p: PodInfo, err: Exception | str) -> None:
        log.warning("bind of %s failed: %s", p.key, err)
        self.cache.cluster.forget_pod(p.key)
        if not gone(err):
            self.cache.requeue(p)
        self.cache.changed(p.pod_group)

    def _bind_with_volumes(self, p: PodInfo, node: str, state: CycleState) -> None:
        """PreBind (bind or provision the pod's claims, wait for the PV controller), then bind."""
        err: Exception | str | None
        try:
            st = self.framework.run_pre_bind(state, p, node)
            err = "; ".join(st.reasons) or "PreBind failed" if not st.ok else None
            if err is None:
                err = self.writer.bind_many([(p.pod, node, None)])[0]
        except Exception as e:
            log.exception("binding %s with its volumes", p.key)
            err = e
        with self.cache.lock:
            if err is None:
                self.cache.cluster.finish_binding(p.key)
            else:
                self.framework.run_unreserve(state, p, node)
                self._failed(p, err)
        self.cache.dirty.set()

    def evict(self, evictions: list[Eviction]) -> None:
        """Delete each victim with its grace period; an Evict event on it
        and on its PodGroup, as Volcano's cache records them."""
        for e in evictions:
            victim = e.pod
            try:
                self.writer.evict(victim.pod, victim.grace_seconds)
            except Exception:
                log.exception("evicting %s", victim.key)
                continue
            self.writer.event(victim.pod, "Warning", "Evict",
                              f"Pod is evicted, because of {e.reason}")  # fmt: skip
            self.writer.event(e.group, "Normal", "Evict", e.reason)
