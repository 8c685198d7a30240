"""In-place resize as the kubelet 1.33 decides it: a resize the node can
never hold is Infeasible, one that does not fit beside the other pods is
Deferred (and allocated once it fits), either a PodResizePending condition
while the pod runs on with what it has; container statuses report the
resources allocated and applied. Before, every resize went straight to the
runtime, whatever the node had left."""

from __future__ import annotations

from typing import Any

from agent.admission import admit, pod_requests
from agent.allocation import Allocations
from agent.pod_status import ContainerInfo, PodObservation, compute_pod_status

NODE = {"status": {"allocatable": {"cpu": "2", "memory": "1Gi", "pods": "110"}}}


def pod(uid: str, cpu: str, memory: str = "128Mi", **more: Any) -> dict[str, Any]:
    res = {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}
    return {
        "metadata": {"name": f"p-{uid}", "namespace": "default", "uid": uid},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": res}], **more},
    }


def cpu_of(p: dict[str, Any]) -> str:
    return str(p["spec"]["containers"][0]["resources"]["requests"]["cpu"])


def test_infeasible_deferred_and_allocated_once_it_fits() -> None:
    alloc = Allocations()
    other = pod("o", "1")
    others = [alloc.allocated(other)]
    running, pending = alloc.sync(pod("p", "500m"), NODE, lambda: others)
    assert pending is None and cpu_of(running) == "500m"

    # More than the node has: Infeasible; the pod runs on with 500m.
    running, pending = alloc.sync(pod("p", "3"), NODE, lambda: others)
    assert pending is not None and pending.reason == "Infeasible"
    assert (
        pending.message == "Node didn't have enough capacity: cpu, requested: 3000, capacity: 2000"
    )
    assert cpu_of(running) == "500m"
    _, pending = alloc.sync(pod("p", "500m", "2Gi"), NODE, lambda: others)
    assert pending is not None and pending.message == (
        "Node didn't have enough capacity: memory, requested: 2147483648, capacity: 1073741824"
    )

    # Fits the node, not beside the other pod: Deferred, retried each sync.
    running, pending = alloc.sync(pod("p", "1500m"), NODE, lambda: others)
    assert pending is not None and pending.reason == "Deferred"
    assert pending.message == (
        "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"
    )
    assert cpu_of(running) == "500m" and cpu_of(alloc.allocated(pod("p", "1500m"))) == "500m"
    running, pending = alloc.sync(pod("p", "1500m"), NODE, lambda: [])  # the other pod gone
    assert pending is None and cpu_of(running) == "1500m"
    assert alloc.resources("p")["c"]["limits"]["cpu"] == "1500m"
    alloc.forget("p")
    assert alloc.resources("p") == {}


def test_native_sidecars_count_beside_the_app_in_the_pod_requests() -> None:
    sidecar = {"name": "s", "restartPolicy": "Always",
               "resources": {"requests": {"cpu": "500m"}}}  # fmt: skip
    init = {"name": "i", "resources": {"requests": {"cpu": "1"}}}
    p = pod("p", "1", initContainers=[sidecar, init])
    # app 1 + sidecar 0.5; the init step is 0.5 + 1: the pod needs 1.5
    assert pod_requests(p)["cpu"] == 1.5
    rejection = admit(p, {"status": {"allocatable": {"cpu": "1200m"}}}, [])
    assert rejection is not None and rejection.message == (
        "Node didn't have enough resource: cpu, requested: 1500, used: 0, capacity: 1200"
    )


def test_pending_resize_and_container_resources_in_the_status() -> None:
    p = pod("p", "3")
    running = ContainerInfo(id="c1", name="c", attempt=0, state="running", started_at=1.0)
    applied = {"requests": {"cpu": "500m", "memory": "128Mi"},
               "limits": {"cpu": "500m", "memory": "128Mi"}}  # fmt: skip
    obs = PodObservation(
        sandbox_ready=True, containers=(running,), ready=frozenset({"c"}),
        started=frozenset({"c"}), resources={"c": applied},
        resize_pending=("Infeasible", "Node didn't have enough capacity: cpu, ..."),
    )  # fmt: skip
    st = compute_pod_status(p, obs, 100.0)
    cond = next(c for c in st["conditions"] if c["type"] == "PodResizePending")
    assert (cond["status"], cond["reason"]) == ("True", "Infeasible")
    assert st["containerStatuses"][0]["resources"] == applied
    p["status"] = st
    later = compute_pod_status(p, obs, 200.0)
    again = next(c for c in later["conditions"] if c["type"] == "PodResizePending")
    assert again["lastTransitionTime"] == cond["lastTransitionTime"]  # same reason
    obs.resize_pending = None
    done = compute_pod_status(p, obs, 300.0)
    assert "PodResizePending" not in {c["type"] for c in done["conditions"]}
