"""Leader election on a coordination.k8s.io/v1 Lease, as client-go does it.

Candidates race to write their identity into one Lease (`spec.holderIdentity`,
`leaseDurationSeconds`, `acquireTime`, `renewTime`, `leaseTransitions`) with
optimistic concurrency: every write carries the resourceVersion it read, so
of two candidates only one wins; the other gets Conflict and tries later.
A lease held by someone else may be taken only after it went unrenewed for
`lease_duration` seconds *as observed on our own clock* (the time we last saw
the record change), never by comparing another host's timestamps to ours.
The leader renews every `retry_period`; if it cannot renew within
`renew_deadline` it stops leading (`on_stopped_leading`) before the lease can
expire, so two leaders never act at once. On a clean stop it releases the
lease so a successor need not wait. All timing runs on the injected clock.
"""

from __future__ import annotations

import copy
import logging
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controlplane.client import errors
from controlplane.client.interface import ApiClient, Object
from machinery.clock import Clock, RealClock
from machinery.rfc3339 import format_micro_time

log = logging.getLogger(__name__)

LEASE = "Lease"


@dataclass(frozen=True)
class LeaderElectionConfig:
    name: str
    namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("leader election: identity must not be empty")
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError(
                "leader election: need lease_duration > renew_deadline > retry_period > 0"
            )


@dataclass
class Callbacks:
    # Runs on its own thread once we lead; the event is set when we stop leading.
    on_started_leading: Callable[[threading.Event], None] | None = None
    on_stopped_leading: Callable[[], None] | None = None
    # Called with the new holder's identity whenever it changes (us included).
    on_new_leader: Callable[[str], None] | None = None


class LeaderElector:
    def __init__(
        self,
        client: ApiClient,
        config: LeaderElectionConfig,
        callbacks: Callbacks | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config
        self.callbacks = callbacks or Callbacks()
        self.clock: Clock = clock or RealClock()
        self._observed: dict[str, Any] = {}
        self._observed_time = 0.0
        self._leading = False
        self._reported_leader = ""

    # ---- state --------------------------------------------------------------

    def is_leader(self) -> bool:
        return self._leading

    def leader(self) -> str:
        """The holder we last observed ("" if none)."""
        return str(self._observed.get("holderIdentity") or "")

    # ---- one step -----------------------------------------------------------

    def _spec(self, now: float, previous: dict[str, Any]) -> dict[str, Any]:
        cfg = self.config
        ours = previous.get("holderIdentity") == cfg.identity
        spec = {
            "holderIdentity": cfg.identity,
            "leaseDurationSeconds": int(cfg.lease_duration),
            "acquireTime": previous.get("acquireTime") if ours else format_micro_time(now),
            "renewTime": format_micro_time(now),
            "leaseTransitions": int(previous.get("leaseTransitions") or 0)
            + (0 if ours or not previous else 1),
        }
        if ours and not spec["acquireTime"]:
            spec["acquireTime"] = format_micro_time(now)
        return spec

    def _observe(self, spec: dict[str, Any], now: float) -> None:
        if spec != self._observed:
            self._observed = copy.deepcopy(spec)
            self._observed_time = now
        holder = str(spec.get("holderIdentity") or "")
        if holder != self._reported_leader:
            self._reported_leader = holder
            if holder and self.callbacks.on_new_leader is not None:
                self.callbacks.on_new_leader(holder)

    def try_acquire_or_renew(self) -> bool:
        """One attempt to take or keep the lease. True if we hold it afterwards."""
        cfg = self.config
        now = self.clock.now()
        mono = self.clock.monotonic()
        try:
            lease = self.client.get(LEASE, cfg.name, cfg.namespace)
        except errors.NotFound:
            body: Object = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": LEASE,
                "metadata": {"name": cfg.name, "namespace": cfg.namespace},
                "spec": self._spec(now, {}),
            }
            try:
                created = self.client.create(LEASE, body, cfg.namespace)
            except errors.ApiError as err:
                log.info("lease create failed: %s", err, extra={"lease": cfg.name})
                return False
            self._observe(created.get("spec") or {}, mono)
            return True
        except errors.ApiError as err:
            log.info("lease get failed: %s", err, extra={"lease": cfg.name})
            return False

        spec = dict(lease.get("spec") or {})
        self._observe(spec, mono)
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or cfg.lease_duration)
        if holder and holder != cfg.identity and self._observed_time + duration > mono:
            return False  # held by another candidate and not expired
        new = copy.deepcopy(lease)
        new["spec"] = self._spec(now, spec)
        try:
            updated = self.client.update(LEASE, new)
        except errors.ApiError as err:
            log.info("lease update failed: %s", err, extra={"lease": cfg.name})
            return False
        self._observe(updated.get("spec") or {}, mono)
        return True

    def release(self) -> bool:
        """Give the lease up if we hold it, so a successor need not wait it out."""
        cfg = self.config
        try:
            lease = self.client.get(LEASE, cfg.name, cfg.namespace)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != cfg.identity:
                return False
            new = copy.deepcopy(lease)
            new["spec"] = {
                **spec,
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "renewTime": format_micro_time(self.clock.now()),
            }
            updated = self.client.update(LEASE, new)
        except errors.ApiError as err:
            log.info("lease release failed: %s", err, extra={"lease": cfg.name})
            return False
        self._observe(updated.get("spec") or {}, self.clock.monotonic())
        return True

    # ---- the loop -----------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Acquire, lead until the lease is lost or `stop` is set, then return.

        Blocks. `on_started_leading` runs on a new thread; `on_stopped_leading`
        runs on this one before `run` returns (only if we led).
        """
        cfg = self.config
        acquired = False
        while not stop.is_set():
            if self.try_acquire_or_renew():
                acquired = True
                break
            if self.clock.sleep(cfg.retry_period, stop):
                return
        if stop.is_set():
            # Stopped while the acquiring write was in flight: the lease is
            # ours in the store, so give it back rather than leave a
            # successor to wait out its duration.
            if acquired and cfg.release_on_cancel:
                self.release()
            return
        self._leading = True
        leading = threading.Event()
        log.info("became leader", extra={"lease": cfg.name, "identity": cfg.identity})
        if self.callbacks.on_started_leading is not None:
            threading.Thread(
                target=self.callbacks.on_started_leading,
                args=(leading,),
                name=f"leader-{cfg.name}",
                daemon=True,
            ).start()
        try:
            while not stop.is_set():
                if self.clock.sleep(cfg.retry_period, stop):
                    break
                if not self._renew_until_deadline(stop):
                    log.warning("lost the lease", extra={"lease": cfg.name})
                    break
        finally:
            self._leading = False
            leading.set()
            if stop.is_set() and cfg.release_on_cancel:
                self.release()
            if self.callbacks.on_stopped_leading is not None:
                self.callbacks.on_stopped_leading()

    def _renew_until_deadline(self, stop: threading.Event) -> bool:
        deadline = self.clock.monotonic() + self.config.renew_deadline
        while not stop.is_set():
            if self.try_acquire_or_renew():
                return True
            if self.clock.monotonic() + self.config.retry_period >= deadline:
                return False
            if self.clock.sleep(self.config.retry_period, stop):
                return True
        return True


def serve_while_leading(
    client: ApiClient,
    stop: threading.Event,
    name: str,
    serve: Callable[[threading.Event], None],
    namespace: str = "kube-system",
) -> None:
    """Campaign for the Lease `namespace/name` until `stop`; while leading, run
    `serve(done)`, where `done` is set when leadership is lost or `stop` is set.
    A failed election (the API going away, a failed renewal) is logged and the
    campaign starts again a second later."""
    identity = f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"

    def lead(leading: threading.Event) -> None:
        done = threading.Event()

        def relay() -> None:
            while not done.is_set():
                if leading.wait(0.5) or stop.is_set():
                    done.set()

        threading.Thread(target=relay, name=f"{name}-term", daemon=True).start()
        serve(done)

    elector = LeaderElector(
        client,
        LeaderElectionConfig(name=name, namespace=namespace, identity=identity),
        Callbacks(on_started_leading=lead),
    )
    while not stop.is_set():
        try:
            elector.run(stop)
        except Exception:
            if stop.is_set():
                return
            log.exception("lease %s/%s: leader election failed; campaigning again", namespace, name)
            stop.wait(1.0)
