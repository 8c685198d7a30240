"""Controllers against a real `skiff controlplane` (SQLite, 127.0.0.1, temp dir).

One control-plane process per module, stopped by its pid; each test gets
its own namespace and its own in-process ControllerManager connected over
gRPC/TLS with the controller manager's own credential (controller-manager.conf),
so every controller here runs inside its role. Tests that need time to pass give the
manager a FakeClock that starts at the real time (the API server stamps
objects with real time) and step it; nothing sleeps.
"""

from __future__ import annotations

import copy
import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from controlplane.apiserver.rbaccomponents import CONTROLLER_MANAGER
from controlplane.client.apiclient import GrpcApiClient
from controlplane.controllers.config import ManagerConfig
from controlplane.controllers.hpa import InMemoryMetrics
from controlplane.controllers.manager import ControllerManager
from machinery.clock import Clock, FakeClock, RealClock
from machinery.rfc3339 import format_time
from tests.harness.controlplane import ControlPlane
from tests.harness.wait import wait_for

_ns = itertools.count(1)


@pytest.fixture(scope="module")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    cp = ControlPlane(Path(tmp_path_factory.mktemp("cp")) / "data", ["--store", "sqlite"])
    cp.start()
    try:
        yield cp
    finally:
        cp.close()


@dataclass
class Cluster:
    cp: ControlPlane
    client: GrpcApiClient
    namespace: str
    clock: Clock
    metrics: InMemoryMetrics
    managers: list[ControllerManager] = field(default_factory=list)

    def start(self, controllers: str, **config: Any) -> ControllerManager:
        cfg = ManagerConfig(controllers=tuple(controllers.split(",")), **config)
        client = self.cp.client(CONTROLLER_MANAGER.kubeconfig)  # its own role, not the admin's
        m = ControllerManager(client, cfg, clock=self.clock, metrics_source=self.metrics)
        m.start_controllers(10.0)
        self.managers.append(m)
        return m

    def pods(self, alive: bool = True) -> list[dict[str, Any]]:
        items = self.client.list("Pod", self.namespace).items
        if alive:
            items = [p for p in items if not p["metadata"].get("deletionTimestamp")]
        return items

    def wait(self, cond: Callable[[], Any], timeout: float = 20.0, message: str = "") -> Any:
        """Wait for `cond`; with a fake clock each unmet poll moves it by 1 ms so
        retries after a Conflict (5 ms backoff) still happen."""

        def probe() -> Any:
            value = cond()
            if not value and isinstance(self.clock, FakeClock):
                self.clock.step(0.001)
            return value

        return wait_for(probe, timeout=timeout, message=message)

    def step(self, seconds: float) -> None:
        assert isinstance(self.clock, FakeClock)
        self.clock.step(seconds)

    def settle(self, cond: Callable[[], Any], step: float = 0.5, timeout: float = 30.0) -> Any:
        def probe() -> Any:
            value = cond()
            if not value and isinstance(self.clock, FakeClock):
                self.clock.step(step)
            return value

        return wait_for(probe, timeout=timeout, interval=0.05)

    def set_pod_status(
        self,
        pod: dict[str, Any],
        phase: str = "Running",
        ready: bool = True,
        ip: str = "10.244.1.5",
    ) -> None:
        """What the agent would report for a pod."""
        body = copy.deepcopy(pod)
        now = format_time(self.clock.now())
        body["status"] = {
            "phase": phase,
            "podIP": ip,
            "startTime": now,
            "conditions": [
                {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": now}
            ],
        }
        body["metadata"].pop("resourceVersion", None)
        self.client.update_status("Pod", body)

    def make_ready(self) -> int:
        n = 0
        for i, pod in enumerate(self.pods()):
            conds = (pod.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds):
                continue
            try:
                self.set_pod_status(pod, ip=f"10.244.1.{i + 2}")
            except Exception:  # deleted meanwhile
                continue
            n += 1
        return n


@pytest.fixture
def cluster(
    control_plane: ControlPlane, request: pytest.FixtureRequest
) -> Iterator[Callable[..., Cluster]]:
    made: list[Cluster] = []

    def make(fake_clock: bool = False) -> Cluster:
        client = control_plane.client()
        ns = f"it-{next(_ns)}"
        client.create(
            "Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        )
        clock: Clock = FakeClock(start=time.time()) if fake_clock else RealClock()
        c = Cluster(control_plane, client, ns, clock, InMemoryMetrics())
        made.append(c)
        return c

    yield make
    for c in made:
        for m in c.managers:
            m.stop_controllers()
