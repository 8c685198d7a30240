"""Node lifecycle, node IPAM and pod GC on the in-memory API, time on a FakeClock."""

from __future__ import annotations

import copy
from typing import Any

from controlplane.controllers import node_health, podgc
from controlplane.controllers.replicaset import pod_from_template
from machinery.rfc3339 import format_time


def node(name: str, zone: str = "", ready: str = "True", now: str = "") -> dict[str, Any]:
    labels = {"topology.kubernetes.io/zone": zone} if zone else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": ready,
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ]
        },
    }


def lease(name: str, renew: str) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": renew},
    }


def renew(e, name: str) -> None:
    lz = e.client.get("Lease", name, "kube-node-lease")
    stamp = format_time(e.clock.now()) + f"#{e.clock.now()}"
    lz["spec"]["renewTime"] = stamp
    e.client.update("Lease", lz)
    # the agent's heartbeat must reach the controller's cache before time moves on
    e.wait(
        lambda: (
            (e.cached("Lease", name, "kube-node-lease") or {}).get("spec", {}).get("renewTime")
            == stamp
        )
    )


def bound_pod(
    e, name: str, node_name: str, tolerations: list[dict[str, Any]] | None = None
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "c", "image": "x"}],
            "tolerations": tolerations or [],
        },
    }
    created = e.client.create("Pod", pod)
    e.set_pod_status(created)


def taint_keys(e, name: str) -> set[tuple[str, str]]:
    return {
        (t["key"], t["effect"])
        for t in e.client.get("Node", name).get("spec", {}).get("taints") or []
    }


def ready_of(e, name: str) -> str:
    for c in e.client.get("Node", name)["status"]["conditions"]:
        if c["type"] == "Ready":
            return str(c["status"])
    return ""


def test_silent_node_goes_unknown_tainted_and_evicted(env):
    e = env("nodelifecycle", node_monitor_grace_period=40.0, default_toleration_seconds=300)
    now = format_time(e.clock.now())
    for n in ("n1", "n2"):
        e.client.create("Node", node(n, now=now))
        e.client.create("Lease", lease(n, now))
    bound_pod(e, "plain", "n1")
    bound_pod(
        e,
        "short",
        "n1",
        [
            {
                "key": node_health.UNREACHABLE,
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 60,
            }
        ],
    )
    bound_pod(
        e,
        "forever",
        "n1",
        [{"key": node_health.UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}],
    )
    bound_pod(e, "elsewhere", "n2")
    ctrl = e.controller("nodelifecycle")
    e.wait(lambda: ctrl.observed_heartbeat("n1") and ctrl.observed_heartbeat("n2"))
    e.wait(e.idle)
    # n2 keeps renewing its lease, n1 goes silent
    for _ in range(9):
        e.clock.step(5)
        renew(e, "n2")
        e.wait(e.idle)
    e.settle(lambda: ready_of(e, "n1") == "Unknown", step=1.0)
    assert ready_of(e, "n2") == "True"
    e.settle(lambda: (node_health.UNREACHABLE, "NoExecute") in taint_keys(e, "n1"), step=1.0)
    assert (node_health.UNREACHABLE, "NoSchedule") in taint_keys(e, "n1")
    assert taint_keys(e, "n2") == set()
    # pods on n1 were marked not ready
    e.wait(
        lambda: all(
            c["status"] == "False"
            for c in e.client.get("Pod", "plain")["status"]["conditions"]
            if c["type"] == "Ready"
        )
    )
    e.clock.step(61)
    e.settle(
        lambda: {p["metadata"]["name"] for p in e.pods()} == {"plain", "forever", "elsewhere"},
        step=1.0,
    )
    e.clock.step(240)
    e.settle(
        lambda: {p["metadata"]["name"] for p in e.pods()} == {"forever", "elsewhere"}, step=1.0
    )
    # n1 comes back: the taints go away
    renew(e, "n1")
    n1 = e.client.get("Node", "n1")
    n1["status"]["conditions"] = [
        {"type": "Ready", "status": "True", "lastHeartbeatTime": format_time(e.clock.now())}
    ]
    n1["metadata"].pop("resourceVersion")
    e.client.update_status("Node", n1)
    e.settle(lambda: taint_keys(e, "n1") == set(), step=0.5)


def test_not_ready_node_gets_not_ready_taints(env):
    e = env("nodelifecycle")
    now = format_time(e.clock.now())
    e.client.create("Node", node("n1", ready="False", now=now))
    e.client.create("Lease", lease("n1", now))
    e.wait(lambda: (node_health.NOT_READY, "NoExecute") in taint_keys(e, "n1"))


def test_pressure_conditions_taint_the_node_and_clear(env):
    """TaintNodesByCondition: the controller, not the node, puts a pressure
    condition's NoSchedule taint on and takes it off; taints of others stay."""
    e = env("nodelifecycle")
    now = format_time(e.clock.now())
    n = node("n1", now=now)
    n["spec"]["taints"] = [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]
    n["status"]["conditions"].append(
        {"type": "MemoryPressure", "status": "True", "lastHeartbeatTime": now}
    )
    e.client.create("Node", n)
    e.client.create("Lease", lease("n1", now))
    pressure = ("node.kubernetes.io/memory-pressure", "NoSchedule")
    e.wait(lambda: pressure in taint_keys(e, "n1"))
    assert ("dedicated", "NoSchedule") in taint_keys(e, "n1")
    cur = e.client.get("Node", "n1")
    for c in cur["status"]["conditions"]:
        if c["type"] == "MemoryPressure":
            c["status"] = "False"
    e.client.update_status("Node", cur)
    e.wait(lambda: taint_keys(e, "n1") == {("dedicated", "NoSchedule")})


def test_pressure_taints_follow_conditions() -> None:
    wanted = node_health.wanted_taints("True", False, ["MemoryPressure", "PIDPressure"])
    assert wanted == [
        {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/pid-pressure", "effect": "NoSchedule"},
    ]
    assert node_health.pressures(
        {"status": {"conditions": [{"type": "DiskPressure", "status": "True"},
                                   {"type": "MemoryPressure", "status": "False"}]}}
    ) == ["DiskPressure"]  # fmt: skip


def test_eviction_is_rate_limited_in_full_disruption(env):
    e = env("nodelifecycle")
    now = format_time(e.clock.now())
    for n in ("a", "b", "c"):
        e.client.create("Node", node(n, zone="z1", now=now))
        e.client.create("Lease", lease(n, now))
    ctrl = e.controller("nodelifecycle")
    # every heartbeat seen at this time before it moves on
    e.wait(lambda: all((ctrl.observed_heartbeat(n) or ("", 0.0))[0].startswith(now) for n in "abc"))
    e.wait(e.idle)
    e.clock.step(41)
    e.settle(lambda: all(ready_of(e, n) == "Unknown" for n in "abc"), step=0.5)
    e.wait(e.idle)
    # every node of the zone is down: full disruption, no NoExecute taints (no evictions)
    noexec = [n for n in "abc" if (node_health.UNREACHABLE, "NoExecute") in taint_keys(e, n)]
    assert len(noexec) <= 1
    assert all((node_health.UNREACHABLE, "NoSchedule") in taint_keys(e, n) for n in "abc")


def test_node_ipam_assigns_and_releases(env):
    e = env("nodeipam", cluster_cidr="10.244.0.0/16")
    pre = node("pre")
    pre["spec"]["podCIDR"] = "10.244.0.0/24"
    e.client.create("Node", pre)
    e.wait(lambda: e.cached("Node", "pre", None))
    for n in ("a", "b"):
        e.client.create("Node", node(n))
    e.wait(lambda: all(e.client.get("Node", n)["spec"].get("podCIDR") for n in ("a", "b")))
    cidrs = {e.client.get("Node", n)["spec"]["podCIDR"] for n in ("pre", "a", "b")}
    assert len(cidrs) == 3
    assert e.client.get("Node", "a")["spec"]["podCIDRs"] == [
        e.client.get("Node", "a")["spec"]["podCIDR"]
    ]
    freed = e.client.get("Node", "a")["spec"]["podCIDR"]
    e.client.delete("Node", "a")
    e.wait(lambda: e.controller("nodeipam").allocator.used() == 2)
    assert freed not in {e.client.get("Node", n)["spec"]["podCIDR"] for n in ("pre", "b")}


def test_node_ipam_gives_back_a_cidr_another_writer_beat_it_to(env):
    """A node that got its CIDR from someone else while node IPAM's write was
    pending (the API server then refuses IPAM's: a CIDR is set once) costs
    the allocator nothing: the pending CIDR is released."""
    e = env("nodeipam", cluster_cidr="10.244.0.0/16")
    ipam = e.controller("nodeipam")
    pending = ipam.allocator.allocate()
    ipam._assigned["x"] = pending
    taken = node("x")
    taken["spec"]["podCIDR"] = "10.244.9.0/24"
    e.client.create("Node", taken)
    e.wait(lambda: "x" not in ipam._assigned)
    assert ipam.allocator.used() == 1  # 10.244.9.0/24 only: the pending one is free again


def test_pod_gc(env):
    e = env("podgc", terminated_pod_gc_threshold=2)
    e.client.create("Node", node("live"))
    e.wait(lambda: e.cached("Node", "live", None))
    owner = {
        "metadata": {"name": "x", "namespace": "default", "uid": "u"},
        "spec": {"template": {"spec": {}}},
    }
    for _i in range(4):
        p = pod_from_template(owner, "done-")
        p["metadata"]["ownerReferences"] = []
        p["spec"]["nodeName"] = "live"
        created = e.client.create("Pod", p)
        e.clock.step(1)
        e.set_pod_status(created, phase="Succeeded", ready=False)
    bound_pod(e, "orphaned", "gone-node")
    bound_pod(e, "running", "live")
    e.clock.step(20)
    # The terminated pods over the threshold go at the next pass; the pod
    # of the missing node waits out its node's quarantine.
    e.settle(lambda: len(e.pods()) == 4, step=1.0)
    gc = e.controller("podgc")
    assert "default/orphaned:orphaned" not in gc.deleted
    e.settle(lambda: len(e.pods()) == 3, step=1.0)
    names = {p["metadata"]["name"] for p in e.pods()}
    assert "orphaned" not in names and "running" in names
    done = sorted(p["metadata"]["name"] for p in e.pods() if p["status"]["phase"] == "Succeeded")
    assert len(done) == 2


def test_pod_gc_waits_out_a_missing_nodes_quarantine(env):
    """As Kubernetes' pod GC: a pod bound to a Node the cache does not have
    is deleted only when the Node is still missing 40 s after it was first
    found missing; a Node that turns up in time keeps its pods."""
    e = env("podgc")
    gc = e.controller("podgc")
    bound_pod(e, "early", "late-node")
    bound_pod(e, "orphaned", "gone-node")
    e.wait(lambda: e.cached("Pod", "orphaned") and e.cached("Pod", "early"))
    e.settle(lambda: {"late-node", "gone-node"} <= set(gc._missing_since), step=1.0)
    start = gc._missing_since["gone-node"]
    e.client.create("Node", node("late-node"))
    e.wait(lambda: e.cached("Node", "late-node", None))
    e.settle(lambda: e.clock.monotonic() - start > podgc.QUARANTINE - 2, step=1.0)
    assert {p["metadata"]["name"] for p in e.pods()} == {"early", "orphaned"}
    e.settle(lambda: [p["metadata"]["name"] for p in e.pods()] == ["early"], step=1.0)
    assert e.clock.monotonic() - start >= podgc.QUARANTINE
    assert gc.deleted == ["default/orphaned:orphaned"]


def test_copy_helpers_do_not_mutate():
    n = node("x")
    before = copy.deepcopy(n)
    node_health.merge_taints([], node_health.wanted_taints("False", False), "t")
    assert n == before
