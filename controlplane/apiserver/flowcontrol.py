"""API priority and fairness, in small: what one client may hold at once.

Every request is sorted into a lane by who sends it and what it touches
(Kubernetes' priority levels): `heartbeat` for a node's own Lease and Node
(renewals must always get through), `system` for the admin and the
control plane's own components, `node` for the rest of the nodes' traffic,
and `user` for everyone else. Each lane but `heartbeat` has its own cap on
requests in flight, mutating and read-only counted apart; a request over
its lane's cap is refused at once (TooManyRequests, gRPC RESOURCE_EXHAUSTED,
HTTP 429) instead of waiting for a server thread.

Watches are long-running and counted apart: per identity (the admin
excepted: every control-plane component shares it) and in total. The caps
are fractions of the server's worker threads (every open gRPC stream holds
one), chosen so that the heartbeat lane always finds a free thread.

This module only counts; it never authenticates, decodes or touches storage.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from controlplane.apiserver.auth import Identity
from controlplane.apiserver.noderestriction import NODE_LEASE_NAMESPACE
from controlplane.client.errors import TooManyRequests

HEARTBEAT, SYSTEM, NODE, USER = "heartbeat", "system", "node", "user"


@dataclass(frozen=True)
class Limits:
    """Caps on concurrent work; `for_workers` sizes them for a thread pool."""

    watches_total: int = 192
    watches_per_identity: int = 128
    system_mutating: int = 64
    system_readonly: int = 64
    node_mutating: int = 16
    node_readonly: int = 16
    user_mutating: int = 16
    user_readonly: int = 16

    @staticmethod
    def for_workers(workers: int) -> Limits:
        """Watches take 3/8 of the threads, the admin lane 1/4, nodes and users
        1/16 each: at least 1/4 stays free for heartbeats and quick refusals."""
        return Limits(
            watches_total=max(workers * 3 // 8, 1),
            watches_per_identity=max(min(128, workers // 4), 1),
            system_mutating=max(workers // 8, 1),
            system_readonly=max(workers // 8, 1),
            node_mutating=max(workers // 32, 1),
            node_readonly=max(workers // 32, 1),
            user_mutating=max(workers // 32, 1),
            user_readonly=max(workers // 32, 1),
        )


def lane(identity: Identity, kind: str, namespace: str) -> str:
    """The priority level of a request by `identity` on `kind`."""
    if identity.node is not None:
        if kind == "Node" or (kind == "Lease" and namespace in ("", NODE_LEASE_NAMESPACE)):
            return HEARTBEAT
        return NODE
    if identity.admin:
        return SYSTEM
    return USER


class FlowControl:
    """See the module docstring. Thread-safe."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._inflight: dict[tuple[str, bool], int] = {}
        self._watches: dict[str, int] = {}
        self._watch_total = 0
        # Refusals so far by (lane, "mutating"/"readOnly"/"watch"), for /metrics.
        self.rejected: dict[tuple[str, str], int] = {}
        self._caps: dict[tuple[str, bool], int] = {
            (SYSTEM, True): limits.system_mutating,
            (SYSTEM, False): limits.system_readonly,
            (NODE, True): limits.node_mutating,
            (NODE, False): limits.node_readonly,
            (USER, True): limits.user_mutating,
            (USER, False): limits.user_readonly,
        }

    def acquire(self, identity: Identity, kind: str, namespace: str, mutating: bool) -> str:
        """Take a slot of the request's lane (raise TooManyRequests when full);
        returns the lane, to hand back to `release`."""
        name = lane(identity, kind, namespace)
        cap = self._caps.get((name, mutating))
        if cap is None:
            return name  # heartbeats are never refused
        key = (name, mutating)
        with self._lock:
            held = self._inflight.get(key, 0)
            if held >= cap:
                kind = "mutating" if mutating else "readOnly"
                self.rejected[(name, kind)] = self.rejected.get((name, kind), 0) + 1
                what = "mutating" if mutating else "read-only"
                raise TooManyRequests(
                    f"too many {what} requests in flight in the {name} priority level "
                    f"(limit {cap}): retry later"
                )
            self._inflight[key] = held + 1
        return name

    def release(self, name: str, mutating: bool) -> None:
        key = (name, mutating)
        with self._lock:
            if key in self._inflight:
                self._inflight[key] -= 1

    @contextmanager
    def request(
        self, identity: Identity, kind: str, namespace: str, mutating: bool
    ) -> Iterator[None]:
        name = self.acquire(identity, kind, namespace, mutating)
        try:
            yield
        finally:
            self.release(name, mutating)

    def inflight(self, name: str, mutating: bool) -> int:
        with self._lock:
            return self._inflight.get((name, mutating), 0)

    def watch(self, identity: Identity) -> Callable[[], None]:
        """Count one more open watch of `identity` (raise TooManyRequests over a
        cap); returns the function that ends it (safe to call twice)."""
        limits = self.limits
        with self._lock:
            if self._watch_total >= limits.watches_total:
                self._reject_watch(identity)
                raise TooManyRequests(
                    f"too many watches open on this server (limit {limits.watches_total}): "
                    "retry later"
                )
            mine = self._watches.get(identity.user, 0)
            if not identity.admin and mine >= limits.watches_per_identity:
                self._reject_watch(identity)
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

    def _reject_watch(self, identity: Identity) -> None:
        key = (lane(identity, "", "-"), "watch")  # under the lock
        self.rejected[key] = self.rejected.get(key, 0) + 1

    def snapshot(self) -> tuple[dict[tuple[str, bool], int], dict[tuple[str, str], int]]:
        """Requests in flight by (lane, mutating) and refusals so far (for /metrics)."""
        with self._lock:
            return dict(self._inflight), dict(self.rejected)

    def watch_count(self, user: str | None = None) -> int:
        with self._lock:
            return self._watch_total if user is None else self._watches.get(user, 0)
