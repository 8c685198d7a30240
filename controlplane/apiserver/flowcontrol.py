"""API priority and fairness: FlowSchemas and PriorityLevelConfigurations
decide what a request waits for, as Kubernetes' APF does.

Each request is classified (apf_match.py) by the stored FlowSchemas into a
priority level; the level's nominal concurrency limit (its share of
`Limits.concurrency`, the server's request threads less those kept for
watches) caps what it holds at once. An Exempt level (`exempt`: the
system:masters group and health probes) is never held back; a full
Limited level with `limitResponse: Reject` (the mandatory `catch-all`)
refuses at once, one with `Queue` holds the request in its flow's
shortest queue (shuffle sharding, `queueLengthLimit` each) until a seat
frees, handing seats out round-robin over the queues so one busy flow
cannot starve the others, for at most `Limits.queue_wait` seconds; and at
most `Limits.queued_total` requests wait server-wide (each holds a server
thread). What a Limited level enforces is its current limit, which moves
between what it may lend and what it may borrow with the levels' demand
(`adjust`, every `apf_borrowing.PERIOD`; apf_borrowing.py). A refused request is a 429 with Kubernetes' message `Too many
requests, please try again later.` and Retry-After: 1. The REST API
answers every classified request with the headers
X-Kubernetes-PF-FlowSchema-UID and X-Kubernetes-PF-PriorityLevel-UID.

The configuration follows the stored objects (`configure`, fed by the API
server from its watch); until the store has been read, and on a server
with none, Kubernetes' bootstrap objects apply (apf_bootstrap.py), so the
default configuration gives what skiff's fixed lanes gave: nodes' Lease
and Node heartbeats in `node-high`, the rest of the nodes' traffic in
`system`, the admin exempt, the control plane's components in
`workload-high`, users in `global-default`.

Watches are long-running and counted apart: per identity (the admin
excepted: every control-plane component shares it) and in total.

This module only counts; it never authenticates, decodes or touches storage.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from controlplane.api import apf_bootstrap
from controlplane.api.kinds import by_kind
from controlplane.apiserver import apf_borrowing, apf_match
from controlplane.apiserver.apf_borrowing import DemandStats, SeatDemand
from controlplane.apiserver.apf_match import Digest, Level, Schema
from controlplane.apiserver.auth import Identity
from controlplane.client.errors import TooManyRequests

TOO_MANY = "Too many requests, please try again later."
FLOW_SCHEMA_HEADER = "X-Kubernetes-PF-FlowSchema-UID"
PRIORITY_LEVEL_HEADER = "X-Kubernetes-PF-PriorityLevel-UID"
VERBS = {"Create": "create", "Get": "get", "List": "list", "ListStream": "list",
         "Update": "update", "Patch": "patch", "Delete": "delete", "Watch": "watch",
         "GetScale": "get", "UpdateScale": "update", "Bind": "create",
         "CreateMany": "create"}  # fmt: skip


@dataclass(frozen=True)
class Limits:
    """Caps on concurrent work; `for_workers` sizes them for a thread pool."""

    watches_total: int = 192
    watches_per_identity: int = 128
    concurrency: int = 320  # shared by the Limited levels by their shares
    queued_total: int = 64  # requests waiting in queues, server-wide
    queue_wait: float = 15.0  # seconds a queued request waits at most

    @staticmethod
    def for_workers(workers: int) -> Limits:
        """Watches take 3/8 of the threads, the Limited levels 1/2 together,
        queued requests 1/16: at least 1/16 stays for exempt requests."""
        return Limits(
            watches_total=max(workers * 3 // 8, 1),
            watches_per_identity=max(min(128, workers // 4), 1),
            concurrency=max(workers // 2, 1),
            queued_total=max(workers // 16, 1),
        )


def digest(
    identity: Identity, verb: str, kind: str, namespace: str, subresource: str = ""
) -> Digest:
    """A resource request's digest (`kind` as the registry names it)."""
    try:
        info = by_kind(kind)
        group = info.api_version.rpartition("/")[0]
        resource = info.plural + (f"/{subresource}" if subresource else "")
        namespace = namespace if info.namespaced else ""
    except LookupError:  # an unknown kind (UnknownKind): it fails later, classified by group ""
        group, resource = "", kind.lower()
    return Digest(identity.user, _groups(identity), verb, group, resource, namespace)


def resource_digest(
    identity: Identity, verb: str, group: str, resource: str, namespace: str
) -> Digest:
    """A resource request's digest by group and resource (an aggregated
    API's, whose kinds this server does not know)."""
    return Digest(identity.user, _groups(identity), verb, group, resource, namespace)


def _groups(identity: Identity) -> tuple[str, ...]:
    groups = set(identity.groups)
    if identity.admin:
        groups.add("system:masters")
    if identity.node is not None:
        groups.add("system:nodes")
    groups.add("system:authenticated")
    return tuple(sorted(groups))


MATCHED_MAX = 4096  # digests whose FlowSchema is kept (a few per client)
_UNMATCHED: Any = object()

MUTATING = frozenset({"create", "update", "patch", "delete", "deletecollection"})


@dataclass
class Seat:
    """A request's place: its level (and the UIDs the headers carry)."""

    level: str
    schema_uid: str
    level_uid: str
    exempt: bool
    released: bool = False
    schema: str = ""  # the FlowSchema's name ("" when none matched), for /metrics
    mutating: bool = False  # for apiserver_current_inflight_requests

    def headers(self) -> dict[str, str]:
        out = {}
        if self.schema_uid:
            out[FLOW_SCHEMA_HEADER] = self.schema_uid
        if self.level_uid:
            out[PRIORITY_LEVEL_HEADER] = self.level_uid
        return out


class Refused(TooManyRequests):
    """429 from flow control, with the seat's UIDs for the response headers."""

    def __init__(self, seat: Seat) -> None:
        super().__init__(TOO_MANY)
        self.seat = seat


@dataclass
class _LevelState:
    level: Level
    demand: SeatDemand
    current: int = 0  # the limit enforced now (apf_borrowing)
    inflight: int = 0
    waiting: int = 0  # requests in this level's queues
    queues: list[deque[Pending]] = field(default_factory=list)
    next_queue: int = 0
    stats: DemandStats = field(default_factory=DemandStats)

    def noted(self, now: float) -> None:
        """Feed the seat demand (executing plus queued) to the integrator."""
        self.demand.set(now, self.inflight + self.waiting)


@dataclass(frozen=True)
class LevelLimits:
    """A Limited level's seats, for /metrics."""

    nominal: int
    lower: int
    upper: int
    current: int


class Pending:
    """A request queued for a seat: `wait()` blocks until it has one (or raises)."""

    def __init__(self, flow: FlowControl, seat: Seat, timeout: float) -> None:
        self.flow, self.seat, self.timeout = flow, seat, timeout
        self._granted = threading.Event()

    def grant(self) -> None:
        self._granted.set()

    def wait(self) -> Seat:
        if self._granted.wait(self.timeout) or not self.flow._abandon(self):
            return self.seat
        with self.flow._lock:
            self.flow._refused(self.seat, "time-out")
        raise Refused(self.seat)


class FlowControl:
    """See the module docstring. Thread-safe."""

    def __init__(self, limits: Limits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self._clock = clock
        self.fair_fraction = 0.0  # the last division's fair share (seat_fair_frac)
        self._lock = threading.Lock()
        self._levels: dict[str, _LevelState] = {}
        self._schemas: list[Schema] = []
        # Each digest's FlowSchema under the current schemas (None: none matched):
        # a client's requests repeat a few digests, each matched once.
        self._matched: dict[Digest, Schema | None] = {}
        self._queued = 0
        self._running: dict[tuple[str, str, bool], int] = {}
        self.rejected: dict[tuple[str, str, str], int] = {}
        self._watches: dict[str, int] = {}
        self._watch_total = 0
        self.configure(
            [o for o, _ in apf_bootstrap.bootstrap_objects() if o["kind"] == apf_bootstrap.FS],
            [o for o, _ in apf_bootstrap.bootstrap_objects() if o["kind"] == apf_bootstrap.PLC],
        )

    # ---- configuration ---------------------------------------------------

    def configure(
        self, flow_schemas: Iterable[Mapping[str, Any]], levels: Iterable[Mapping[str, Any]]
    ) -> None:
        """Use these FlowSchemas and PriorityLevelConfigurations from now on
        (requests in flight keep their seats, counted in their level)."""
        sized = apf_match.levels_of(levels, self.limits.concurrency)
        schemas = apf_match.schemas_of(flow_schemas, sized)
        with self._lock:
            now = self._clock()
            old = self._levels
            new: dict[str, _LevelState] = {}
            for name, level in sized.items():
                state = old.get(name) or _LevelState(level, SeatDemand(now))
                state.level = level
                while len(state.queues) < level.queues:
                    state.queues.append(deque())
                new[name] = state
            for name, state in old.items():  # a level that went: its waiters are refused
                if name not in new:
                    for q in state.queues:
                        while q:
                            self._queued -= 1
                            q.popleft().seat.released = True
            self._levels, self._schemas = new, schemas
            self._matched = {}
            self._divide(now)

    def adjust(self) -> None:
        """Divide the seats anew by the demand since the last call (call it
        every apf_borrowing.PERIOD seconds)."""
        with self._lock:
            self._divide(self._clock())

    def _divide(self, now: float) -> None:
        limited = [s for s in self._levels.values() if not s.level.exempt]
        for state in limited:
            state.stats.update(*state.demand.reset(now))
        items = [s.stats.item(s.level.bounds()) for s in limited]
        total = sum(s.level.limit for s in limited)
        try:
            shares, self.fair_fraction = apf_borrowing.allocate(total, items)
        except ValueError:  # cannot happen with bounds from levels_of; keep the limits
            shares = [float(s.current) for s in limited]
        for state, share in zip(limited, shares, strict=True):
            state.current = apf_borrowing.round_half_away(share)
            self._dispatch(state, now)

    def _dispatch(self, state: _LevelState, now: float) -> None:
        """Hand seats to waiters while the level's limit allows."""
        while state.inflight < state.current:
            waiter = self._next_waiter(state)
            if waiter is None:
                break
            state.inflight += 1
            self._executing(waiter.seat, 1)
            waiter.grant()
        state.noted(now)

    def classify(self, d: Digest) -> tuple[Schema | None, Level]:
        with self._lock:
            return self._classify(d)

    def _classify(self, d: Digest) -> tuple[Schema | None, Level]:
        schema = self._matched.get(d, _UNMATCHED)
        if schema is _UNMATCHED:
            schema = apf_match.classify(self._schemas, d)
            if len(self._matched) >= MATCHED_MAX:
                self._matched.clear()
            self._matched[d] = schema
        if schema is not None:
            return schema, self._levels[schema.level].level
        catch_all = self._levels.get("catch-all")
        if catch_all is not None:
            return None, catch_all.level
        return None, Level("catch-all", "", exempt=False, limit=1, reject=True)

    # ---- seats -----------------------------------------------------------

    def admit(self, d: Digest) -> Seat | Pending:
        """A seat now, a place in a queue (`Pending.wait()`), or Refused."""
        with self._lock:
            schema, level = self._classify(d)
            seat = Seat(level.name, schema.uid if schema else "", level.uid, level.exempt,
                        schema=schema.name if schema else "", mutating=d.verb in MUTATING)  # fmt: skip
            if level.exempt:
                self._executing(seat, 1)
                return seat
            state = self._levels.get(level.name)
            if state is None:
                self._refused(seat, "concurrency-limit")
                raise Refused(seat)
            if state.inflight < state.current:
                state.inflight += 1
                state.noted(self._clock())
                self._executing(seat, 1)
                return seat
            if level.reject or self._queued >= self.limits.queued_total or schema is None:
                self._refused(seat, "concurrency-limit" if level.reject else "queue-full")
                raise Refused(seat)
            hand = apf_match.hand(level, apf_match.flow_key(schema, d))
            queue = min((state.queues[i] for i in hand), key=len)
            if len(queue) >= level.queue_length:
                self._refused(seat, "queue-full")
                raise Refused(seat)
            pending = Pending(self, seat, self.limits.queue_wait)
            queue.append(pending)
            self._queued += 1
            state.waiting += 1
            state.noted(self._clock())
            return pending

    def acquire(self, d: Digest) -> Seat:
        """A seat, waiting in a queue if the level says so (raises Refused)."""
        got = self.admit(d)
        return got.wait() if isinstance(got, Pending) else got

    def release(self, seat: Seat) -> None:
        with self._lock:
            if seat.released:
                return
            seat.released = True
            self._executing(seat, -1)
            if seat.exempt:
                return
            state = self._levels.get(seat.level)
            if state is None:
                return
            waiter = self._next_waiter(state) if state.inflight <= state.current else None
            if waiter is not None:
                self._executing(waiter.seat, 1)
                waiter.grant()  # the seat passes on: in-flight stays the same
            elif state.inflight > 0:
                state.inflight -= 1
            state.noted(self._clock())

    # ---- for /metrics (under the lock) ---------------------------------------

    def _executing(self, seat: Seat, delta: int) -> None:
        key = (seat.level, seat.schema, seat.mutating)
        n = self._running.get(key, 0) + delta
        if n > 0:
            self._running[key] = n
        else:
            self._running.pop(key, None)

    def _refused(self, seat: Seat, reason: str) -> None:
        key = (seat.level, seat.schema, reason)
        self.rejected[key] = self.rejected.get(key, 0) + 1

    def level_limits(self) -> dict[str, LevelLimits]:
        """Each Limited level's nominal, lower, upper and current seats."""
        with self._lock:
            out = {}
            for name, state in self._levels.items():
                if not state.level.exempt:
                    b = state.level.bounds()
                    out[name] = LevelLimits(b.nominal, b.lower, b.upper, state.current)
            return out

    def snapshot(
        self,
    ) -> tuple[dict[tuple[str, str, bool], int], dict[tuple[str, str, str], int]]:
        """Requests executing by (level, flow schema, mutating), and refusals
        so far by (level, flow schema, reason), for /metrics."""
        with self._lock:
            return dict(self._running), dict(self.rejected)

    def _next_waiter(self, state: _LevelState) -> Pending | None:
        n = len(state.queues)
        for step in range(n):
            i = (state.next_queue + step) % n
            if state.queues[i]:
                state.next_queue = (i + 1) % n
                self._queued -= 1
                state.waiting -= 1
                return state.queues[i].popleft()
        return None

    def _abandon(self, pending: Pending) -> bool:
        """A queued request timed out: True if it was still queued (now
        removed), False if it was granted a seat meanwhile."""
        with self._lock:
            if pending._granted.is_set():
                return False
            state = self._levels.get(pending.seat.level)
            for q in state.queues if state else ():
                if pending in q:
                    q.remove(pending)
                    self._queued -= 1
                    if state is not None:
                        state.waiting -= 1
                        state.noted(self._clock())
            return True

    @contextmanager
    def request(self, d: Digest) -> Iterator[Seat]:
        seat = self.acquire(d)
        try:
            yield seat
        finally:
            self.release(seat)

    def inflight(self, level: str) -> int:
        with self._lock:
            state = self._levels.get(level)
            return state.inflight if state else 0

    def queued(self) -> int:
        with self._lock:
            return self._queued

    def watch(self, identity: Identity) -> Callable[[], None]:
        """Count one more open watch of `identity` (raise TooManyRequests over a
        cap); returns the function that ends it (safe to call twice)."""
        limits = self.limits
        with self._lock:
            if self._watch_total >= limits.watches_total:
                raise TooManyRequests(
                    f"too many watches open on this server (limit {limits.watches_total}): "
                    "retry later"
                )
            mine = self._watches.get(identity.user, 0)
            if not identity.admin and mine >= limits.watches_per_identity:
                raise TooManyRequests(
                    f"{identity.user} has too many watches open (limit "
                    f"{limits.watches_per_identity} per identity): close some and retry"
                )
            self._watches[identity.user] = mine + 1
            self._watch_total += 1
        done = threading.Event()

        def end() -> None:
            with self._lock:
                if done.is_set():
                    return
                done.set()
                left = self._watches.get(identity.user, 0) - 1
                if left > 0:
                    self._watches[identity.user] = left
                else:
                    self._watches.pop(identity.user, None)
                self._watch_total -= 1

        return end

    def watch_count(self, user: str | None = None) -> int:
        with self._lock:
            return self._watch_total if user is None else self._watches.get(user, 0)
