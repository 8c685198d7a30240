"""skiffctl autoscale against a real `skiff controlplane` with the HPA controller.

The issue's scenario: `skiffctl autoscale deployment nginx --cpu-percent=30
--min=7 --max=8` on the nginx Deployment drives it to 7 replicas, to 8
when usage rises and back to 7 once usage falls and the scale-down
stabilization window has passed. The controllers run in this process with
a FakeClock that starts at the real time (the API server stamps objects
with real time) and pod CPU usage from an in-memory metrics source, as the
controller tests do; nothing sleeps.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controlplane.controllers.config import ManagerConfig
from controlplane.controllers.hpa import InMemoryMetrics
from controlplane.controllers.manager import ControllerManager
from machinery.clock import FakeClock
from tests.harness.controlplane import ControlPlane
from tests.harness.wait import wait_for
from tests.integration.controlplane.cli.test_rollout import Env, nginx

pytestmark = pytest.mark.slow


class Scene:
    def __init__(self, env: Env, clock: FakeClock, metrics: InMemoryMetrics) -> None:
        self.env = env
        self.clock = clock
        self.metrics = metrics

    def replicas(self) -> int:
        return int(self.env.client.get("Deployment", "nginx", self.env.ns)["spec"]["replicas"])

    def settle(self, want: int, step: float) -> None:
        """Step the clock until the Deployment asks for `want` replicas."""

        def probe() -> bool:
            if self.replicas() == want:
                return True
            self.clock.step(step)
            return False

        wait_for(probe, timeout=30, interval=0.05, message=f"{want} replicas")

    def usage(self, cores: float) -> None:
        for p in self.env.pods():
            self.metrics.set(
                self.env.ns, p["metadata"]["name"], "cpu", cores, timestamp=self.clock.now()
            )


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    cp = ControlPlane(Path(tmp_path_factory.mktemp("cp")) / "data", ["--store", "sqlite"])
    cp.start()
    manager: ControllerManager | None = None
    try:
        client = cp.client()
        client.create(
            "Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "as"}}
        )
        clock = FakeClock(start=time.time())
        metrics = InMemoryMetrics()
        manager = ControllerManager(
            cp.client(),
            ManagerConfig(controllers=("deployment", "replicaset", "horizontalpodautoscaling")),
            clock=clock,
            metrics_source=metrics,
        )
        manager.start_controllers(10.0)
        yield Scene(Env(cp, client, "as"), clock, metrics)
    finally:
        if manager is not None:
            manager.stop_controllers()
        cp.close()


def manifest_with_requests() -> str:
    doc: dict[str, Any] = yaml.safe_load(nginx("nginx:1.14.2"))
    doc["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    return yaml.safe_dump(doc)


def test_autoscale_errors_from_the_server(scene: Scene) -> None:
    env = scene.env
    r = env.ctl("autoscale", "deployment", "missing", "--max=3")
    assert (r.code, r.err) == (
        1,
        'Error from server (NotFound): deployments.apps "missing" not found\n',
    )
    r = env.ctl("autoscale", "deployment/missing", "--min=9", "--max=8")
    assert r.code == 1 and "--max=MAXPODS must be larger or equal to --min=MINPODS" in r.err
    assert not env.client.list("HorizontalPodAutoscaler", env.ns).items


def test_autoscale_drives_nginx_between_7_and_8(scene: Scene) -> None:
    env = scene.env
    r = env.ctl("apply", "-f", "-", stdin=manifest_with_requests())
    assert r.code == 0, r.err
    wait_for(env.rolled_out("nginx:1.14.2"), timeout=60, message="nginx at 3")

    r = env.ctl("autoscale", "deployment", "nginx", "--cpu-percent=30", "--min=7", "--max=8")
    assert (r.code, r.out) == (0, "horizontalpodautoscaler.autoscaling/nginx autoscaled\n"), r.err
    hpa = env.client.get("HorizontalPodAutoscaler", "nginx", env.ns)
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "nginx",
    }
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (7, 8)
    assert hpa["spec"]["metrics"][0]["resource"]["target"] == {
        "type": "Utilization",
        "averageUtilization": 30,
    }
    r = env.ctl("get", "hpa", "nginx")
    assert r.code == 0 and "Deployment/nginx" in r.out

    scene.settle(7, step=5.0)  # below minReplicas: straight to 7
    wait_for(env.rolled_out("nginx:1.14.2", replicas=7), timeout=60, message="nginx at 7")
    scene.clock.step(61)  # past the first metric window after readiness
    scene.usage(0.09)  # 90% of the 100m request, far above the 30% target: capped at 8
    scene.settle(8, step=5.0)
    wait_for(env.rolled_out("nginx:1.14.2", replicas=8), timeout=60, message="nginx at 8")
    scene.clock.step(61)
    scene.usage(0.001)
    scene.settle(7, step=30.0)  # after the 5-minute stabilization window
    r = env.ctl("autoscale", "deployment/nginx", "--max=8")
    assert r.code == 1 and r.err.startswith("Error from server (AlreadyExists)")
