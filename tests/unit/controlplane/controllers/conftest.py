"""Fixtures for controller tests: a controller manager over the in-memory API.

`env("replicaset,deployment")` starts those controllers against a
FakeApiClient whose timestamps come from the same FakeClock the controllers
use, so tests move time with `env.clock.step()` and never sleep. Helpers
play the part of the scheduler and agent where a test needs pods bound,
running or ready.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from controlplane.client.errors import NotFound
from controlplane.controllers.config import ManagerConfig
from controlplane.controllers.hpa import InMemoryMetrics
from controlplane.controllers.manager import ControllerManager
from machinery.clock import FakeClock
from machinery.rfc3339 import format_time
from tests.fakes.fake_apiclient import FakeApiClient
from tests.harness.wait import wait_for


@dataclass
class Env:
    client: FakeApiClient
    clock: FakeClock
    manager: ControllerManager
    metrics: InMemoryMetrics

    def pods(self, namespace: str = "default", alive: bool = True) -> list[dict[str, Any]]:
        pods = self.client.objects("Pod", namespace)
        if alive:
            pods = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        return pods

    def wait(self, cond: Callable[[], Any], timeout: float = 10.0, message: str = "") -> Any:
        """Wait for `cond`; each unmet poll moves the fake clock by 1 ms, so a
        retry after a Conflict (5 ms backoff) still happens while time stays
        where the test put it for any practical purpose."""

        def probe() -> Any:
            value = cond()
            if not value:
                self.clock.step(0.001)
            return value

        return wait_for(probe, timeout=timeout, message=message)

    def tick(self, seconds: float = 0.01) -> None:
        self.clock.step(seconds)

    def settle(
        self, cond: Callable[[], Any], timeout: float = 10.0, step: float = 0.01, message: str = ""
    ) -> Any:
        """Wait for `cond`, nudging the fake clock so retries with backoff happen."""

        def probe() -> Any:
            value = cond()
            if not value:
                self.clock.step(step)
            return value

        return wait_for(probe, timeout=timeout, message=message)

    def cached(
        self, kind: str, name: str, namespace: str | None = "default"
    ) -> dict[str, Any] | None:
        """The object as the controllers' shared informer sees it."""
        ctx = self.manager.context
        assert ctx is not None
        return ctx.informers.informer_for(kind).store.get(name, namespace)

    def controller(self, name: str) -> Any:
        return self.manager.controllers[name]

    def idle(self) -> bool:
        return all(
            c.queue_depth() == 0 and c.queue.processing() == 0
            for c in self.manager.controllers.values()
        )

    def set_pod_status(
        self,
        pod: dict[str, Any],
        phase: str = "Running",
        ready: bool = True,
        ip: str = "10.244.0.5",
        node: str | None = None,
    ) -> None:
        if node is not None and not pod.get("spec", {}).get("nodeName"):
            pod = self.client.patch(
                "Pod",
                pod["metadata"]["name"],
                {"spec": {"nodeName": node}},
                pod["metadata"]["namespace"],
            )
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

    def ready_node(self) -> str:
        """The Node pods made ready run on (its pod CIDR holds their IPs: the
        Endpoints controller publishes no IP its node could not have given)."""
        try:
            self.client.get("Node", "n-ready")
        except NotFound:
            self.client.create("Node", {"metadata": {"name": "n-ready"},
                                        "spec": {"podCIDR": "10.244.0.0/24"}})  # fmt: skip
        return "n-ready"

    def make_ready(
        self,
        namespace: str = "default",
        selector: Callable[[dict[str, Any]], bool] | None = None,
        limit: int | None = None,
        node: str | None = None,
    ) -> int:
        """Mark Running+Ready the pods (not being deleted) that are not yet
        (bound to `node` first, if given and they are not bound)."""
        n = 0
        for i, pod in enumerate(self.pods(namespace)):
            if selector is not None and not selector(pod):
                continue
            conds = (pod.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds):
                continue
            if limit is not None and n >= limit:
                break
            self.set_pod_status(pod, ip=f"10.244.0.{i + 2}", node=node)
            n += 1
        return n


@pytest.fixture
def env() -> Iterator[Callable[..., Env]]:
    managers: list[ControllerManager] = []

    def make(controllers: str, **config: Any) -> Env:
        clock = FakeClock()
        client = FakeApiClient(clock=clock)
        metrics = InMemoryMetrics()
        cfg = ManagerConfig(controllers=tuple(controllers.split(",")), **config)
        manager = ControllerManager(client, cfg, clock=clock, metrics_source=metrics)
        manager.start_controllers(5.0)
        managers.append(manager)
        return Env(client, clock, manager, metrics)

    yield make
    for m in managers:
        m.stop_controllers()


def deployment(
    name: str = "web", replicas: int = 3, image: str = "nginx:1.25", **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
        },
    }
    body["spec"].update(spec)
    return body


def replicaset(
    name: str = "rs", replicas: int = 3, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    labels = labels or {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }
