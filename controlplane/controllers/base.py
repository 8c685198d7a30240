"""What every controller shares: context, workqueue loop, metrics, expectations.

A controller subclasses `Controller`, registers informer handlers that only
compute a key and `enqueue()` it, and implements `sync(key)`: a
level-triggered, idempotent reconcile that reads the informers' stores and
writes through the ApiClient. It may return a delay to be looked at again
(a deadline, a backoff, a periodic resync) on the injected clock.

`Controller.process_one()` wraps every sync the same way: count it, time it,
catch *any* exception (a bug included), log it once with the key, and
re-queue the key with per-item exponential backoff; a success forgets the
backoff. Nothing escapes to stop the worker, so one bad object never stops
the manager. `Expectations` is client-go's ControllerExpectations: a
controller that just asked for N creations/deletions waits for its informer
to observe them before it acts on the same key again, so no duplicate pods
appear while caches catch up (entries expire after 5 minutes).

This module never talks to the API server itself except through
`EventRecorder`, which writes best-effort Events.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from controlplane.client import errors
from controlplane.client.informer import SharedInformer, SharedInformerFactory
from controlplane.client.interface import ApiClient, DeleteOptions, Object
from controlplane.client.store import IndexFunc, object_key
from controlplane.client.workqueue import (
    ItemExponentialFailureRateLimiter,
    RateLimitingQueue,
    ShutDown,
)
from controlplane.controllers import podutil
from controlplane.controllers.config import ManagerConfig
from machinery import rfc3339
from machinery.clock import Clock

log = logging.getLogger(__name__)

T = TypeVar("T")

EXPECTATIONS_TTL = 300.0


class EventRecorder:
    """Writes core/v1 Events about objects; never raises (events are best effort)."""

    def __init__(self, client: ApiClient, component: str, clock: Clock) -> None:
        self.client = client
        self.component = component
        self.clock = clock
        self._lock = threading.Lock()
        self.recorded: list[tuple[str, str, str, str]] = []  # (object key, type, reason, message)

    def event(self, obj: Object, type_: str, reason: str, message: str) -> None:
        meta = podutil.meta(obj)
        key = object_key(obj)
        with self._lock:
            self.recorded.append((key, type_, reason, message))
            if len(self.recorded) > 1000:
                del self.recorded[:500]
        now = rfc3339.format_time(self.clock.now())
        namespace = str(meta.get("namespace") or "default")
        body: Object = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{meta.get('name', 'object')}.", "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion", ""),
                "kind": obj.get("kind", ""),
                "name": meta.get("name", ""),
                "namespace": meta.get("namespace", ""),
                "uid": meta.get("uid", ""),
            },
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": self.component},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            self.client.create("Event", body, namespace)
        except Exception as err:  # events are best effort
            log.debug("could not record event %s: %s", reason, err)

    def reasons(self, key: str | None = None) -> list[str]:
        with self._lock:
            return [r for k, _, r, _ in self.recorded if key is None or k == key]


@dataclass
class ControllerContext:
    """What init functions get: the client, shared informers, the clock, settings."""

    client: ApiClient
    informers: SharedInformerFactory
    clock: Clock
    config: ManagerConfig = field(default_factory=ManagerConfig)
    metrics_source: Any = None  # hpa.MetricsSource; Any to keep this module free of hpa
    executor: ThreadPoolExecutor | None = None

    def informer(self, kind: str, namespace: str | None = None) -> SharedInformer:
        return self.informers.informer_for(kind, namespace)

    def pool(self) -> ThreadPoolExecutor:
        if self.executor is None:
            self.executor = ThreadPoolExecutor(
                max_workers=max(1, self.config.api_parallelism), thread_name_prefix="ctrl-api"
            )
        return self.executor


def ensure_indexer(informer: SharedInformer, name: str, func: IndexFunc) -> None:
    """Add an indexer unless one of that name exists (informers are shared)."""
    try:
        informer.add_indexers({name: func})
    except ValueError:
        pass


def controller_uid_index(obj: Object) -> list[str]:
    ref = podutil.controller_ref(obj)
    return [str(ref.get("uid"))] if ref is not None and ref.get("uid") else []


def owner_uid_index(obj: Object) -> list[str]:
    return [
        str(r.get("uid"))
        for r in podutil.meta(obj).get("ownerReferences") or []
        if isinstance(r, dict) and r.get("uid")
    ]


def orphan_index(obj: Object) -> list[str]:
    """Objects with no controller, filed under their namespace: the only ones
    an owner may adopt, so claiming does not walk every pod of the namespace."""
    if podutil.controller_ref(obj) is not None:
        return []
    return [podutil.namespace_of(obj)]


CONTROLLER_UID = "controller-uid"
OWNER_UID = "owner-uid"
ORPHANS = "orphans"
# What an owner's claiming looks up: its own objects and the adoptable ones.
CLAIMABLE: Mapping[str, IndexFunc] = {CONTROLLER_UID: controller_uid_index, ORPHANS: orphan_index}


@dataclass
class Metrics:
    reconciles: int = 0
    errors: int = 0
    panics: int = 0  # exceptions that are not API errors: bugs
    latency_total: float = 0.0
    latency_max: float = 0.0

    def snapshot(self) -> dict[str, float]:
        return {
            "reconciles": self.reconciles,
            "errors": self.errors,
            "panics": self.panics,
            "latency_seconds_total": self.latency_total,
            "latency_seconds_max": self.latency_max,
            "latency_seconds_avg": self.latency_total / self.reconciles if self.reconciles else 0.0,
        }


class Expectations:
    """Pending creations and deletions per controller key (client-go's
    UIDTrackingControllerExpectations): creations are counted, deletions are
    tracked by pod UID so that seeing a pod both marked for deletion and then
    gone counts once."""

    def __init__(self, clock: Clock, ttl: float = EXPECTATIONS_TTL) -> None:
        self.clock = clock
        self.ttl = ttl
        self._lock = threading.Lock()
        self._adds: dict[str, int] = {}
        self._dels: dict[str, set[str]] = {}
        self._when: dict[str, float] = {}

    def satisfied(self, key: str) -> bool:
        with self._lock:
            if key not in self._when:
                return True
            if self._adds.get(key, 0) <= 0 and not self._dels.get(key):
                return True
            return self.clock.monotonic() - self._when[key] > self.ttl

    def expect_creations(self, key: str, count: int) -> None:
        with self._lock:
            self._adds[key] = count
            self._dels.setdefault(key, set())
            self._when[key] = self.clock.monotonic()

    def expect_deletions(self, key: str, uids: list[str]) -> None:
        with self._lock:
            self._dels[key] = set(uids)
            self._adds.setdefault(key, 0)
            self._when[key] = self.clock.monotonic()

    def creation_observed(self, key: str, count: int = 1) -> None:
        with self._lock:
            if key in self._adds:
                self._adds[key] -= count

    def deletion_observed(self, key: str, uid: str) -> None:
        with self._lock:
            dels = self._dels.get(key)
            if dels is not None:
                dels.discard(uid)

    def delete(self, key: str) -> None:
        with self._lock:
            self._adds.pop(key, None)
            self._dels.pop(key, None)
            self._when.pop(key, None)

    def pending(self, key: str) -> tuple[int, int]:
        with self._lock:
            return self._adds.get(key, 0), len(self._dels.get(key) or ())


class Controller:
    """A named reconcile loop over one rate-limited workqueue of string keys."""

    name = "controller"
    default_workers = 2  # kube-controller-manager's concurrent-*-syncs default

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.client = ctx.client
        self.clock = ctx.clock
        self.config = ctx.config
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            ItemExponentialFailureRateLimiter(0.005, 300.0), clock=ctx.clock
        )
        self.metrics = Metrics()
        self._mlock = threading.Lock()
        self.recorder = EventRecorder(ctx.client, f"{self.name}-controller", ctx.clock)
        self.informers: list[SharedInformer] = []
        self._threads: list[threading.Thread] = []

    # ---- wiring ---------------------------------------------------------------

    def watch(self, kind: str, indexers: Mapping[str, IndexFunc] | None = None) -> SharedInformer:
        """The shared informer of `kind`, started with this controller and
        given `indexers` unless an indexer of that name is there already."""
        informer = self.ctx.informer(kind)
        for name, func in (indexers or {}).items():
            ensure_indexer(informer, name, func)
        if informer not in self.informers:
            self.informers.append(informer)
        return informer

    def watch_primary(self, kind: str) -> SharedInformer:
        """Watch the kind this controller reconciles: every add, update and
        delete of one of its objects queues that object's key."""
        informer = self.watch(kind)
        self.follow(informer, self.enqueue, self.enqueue)
        return informer

    def follow(
        self,
        informer: SharedInformer,
        on_change: Callable[[Object], None],
        on_delete: Callable[[Object], None] | None = None,
    ) -> None:
        """Call `on_change` with each added object and each update's new object,
        and `on_delete` (if any) with each deleted one."""
        informer.add_event_handler(
            on_add=on_change, on_update=lambda _old, new: on_change(new), on_delete=on_delete
        )

    def enqueue(self, obj: Object) -> None:
        self.queue.add(object_key(obj))

    def enqueue_key(self, key: str) -> None:
        self.queue.add(key)

    def enqueue_after(self, key: str, delay: float) -> None:
        self.queue.add_after(key, delay)

    def has_synced(self) -> bool:
        return all(i.has_synced() for i in self.informers)

    # ---- the loop -------------------------------------------------------------

    def sync(self, key: str) -> float | None:
        raise NotImplementedError

    def process_one(self, timeout: float | None = None) -> bool:
        """Take one key and reconcile it. False when the queue is shut down/empty."""
        try:
            key = self.queue.get(timeout)
        except (ShutDown, TimeoutError):
            return False
        start = time.perf_counter()
        failed = False
        bug = False
        requeue: float | None = None
        try:
            requeue = self.sync(key)
        except errors.ApiError as err:
            failed = True
            log.info("%s: sync %s failed: %s", self.name, key, err)
        except Exception:
            failed = True
            bug = True
            log.exception("%s: sync %s raised; retrying with backoff", self.name, key)
        finally:
            elapsed = time.perf_counter() - start
            with self._mlock:
                self.metrics.reconciles += 1
                self.metrics.latency_total += elapsed
                self.metrics.latency_max = max(self.metrics.latency_max, elapsed)
                if failed:
                    self.metrics.errors += 1
                if bug:
                    self.metrics.panics += 1
            if failed:
                self.queue.add_rate_limited(key)
            else:
                self.queue.forget(key)
                if requeue is not None:
                    self.queue.add_after(key, max(0.0, requeue))
            self.queue.done(key)
        return True

    def _worker(self) -> None:
        while True:
            try:
                if not self.process_one():
                    return
            except Exception:  # never let a worker die
                log.exception("%s: worker error", self.name)

    def run(self, workers: int | None = None) -> None:
        """Start worker threads (informers are started by the manager)."""
        for i in range(workers or self.config.workers or self.default_workers):
            t = threading.Thread(target=self._worker, name=f"{self.name}-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def shutdown(self, timeout: float = 5.0) -> None:
        self.queue.shut_down()
        for t in self._threads:
            t.join(timeout)

    def queue_depth(self) -> int:
        return len(self.queue)

    def metrics_snapshot(self) -> dict[str, float]:
        with self._mlock:
            snap = self.metrics.snapshot()
        snap["queue_depth"] = len(self.queue)
        snap["queue_waiting"] = self.queue.waiting()
        return snap

    # ---- helpers for subclasses ----------------------------------------------

    def write_status(
        self, kind: str, obj: Object, status: Mapping[str, Any], *, at_read_version: bool = False
    ) -> bool:
        """Write `status` as obj's status unless it has that status already.
        The write is unconditional unless `at_read_version` (then a newer
        object gets Conflict and the sync retries). False when obj is gone."""
        if status == podutil.status(obj):
            return True
        body = copy.deepcopy(obj)
        body["status"] = status
        if not at_read_version:
            body["metadata"].pop("resourceVersion", None)
        try:
            self.client.update_status(kind, body)
        except errors.NotFound:
            return False
        return True

    def delete_pod(self, pod: Object, grace_period_seconds: int | None = None) -> None:
        """Delete this very pod: the UID precondition makes the API server
        refuse (Conflict) when a new pod has taken its name meanwhile."""
        self.client.delete(
            "Pod",
            podutil.name_of(pod),
            podutil.namespace_of(pod),
            DeleteOptions(
                grace_period_seconds=grace_period_seconds,
                precondition_uid=podutil.uid_of(pod) or None,
            ),
        )

    def run_parallel(self, fn: Callable[[T], Any], items: Iterable[T]) -> list[BaseException]:
        """Run `fn` over items on the shared API pool; the errors, in no order."""
        items = list(items)
        if not items:
            return []
        if len(items) == 1:
            try:
                fn(items[0])
                return []
            except Exception as err:
                return [err]
        futures = [self.ctx.pool().submit(fn, item) for item in items]
        out: list[BaseException] = []
        for f in futures:
            exc = f.exception()
            if exc is not None:
                out.append(exc)
        return out

    def slow_start(
        self, count: int, fn: Callable[[int], Any], initial: int = 1
    ) -> tuple[int, list[BaseException]]:
        """Kubernetes' slowStartBatch: batches of 1, 2, 4, ... until one fails."""
        done = 0
        batch = min(count, initial)
        while batch > 0:
            errs = self.run_parallel(fn, range(done, done + batch))
            done += batch - len(errs)
            if errs:
                return done, errs
            batch = min(2 * batch, count - done)
        return done, []
