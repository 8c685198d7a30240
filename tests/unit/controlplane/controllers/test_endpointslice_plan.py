"""The EndpointSlice controllers' pure parts: a Service's pods as endpoints
(conditions, topology, ports), custom Endpoints mirrored, and the plan that
slices them at most 100 to a slice and keeps endpoints where they are."""

from __future__ import annotations

from typing import Any

from controlplane.controllers.endpointslice import desired_endpoints
from controlplane.controllers.endpointslicemirroring import mirrored_endpoints
from controlplane.controllers.slicesync import Owner, group_key, plan

SVC: dict[str, Any] = {
    "metadata": {"name": "web", "namespace": "ns", "uid": "svc-uid"},
    "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80,
                                                    "targetPort": "web"}]},
}  # fmt: skip
NODE = {"metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "zone-a"}},
        "spec": {"podCIDR": "10.244.1.0/24"}}  # fmt: skip


def pod(name: str, ip: str, ready: bool = True, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                            "labels": {"app": "web"}}  # fmt: skip
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": meta,
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "ports": [
            {"name": "web", "containerPort": 8080}]}]},
        "status": {"phase": "Running", "podIP": ip, "conditions": [
            {"type": "Ready", "status": "True" if ready else "False"}]},
    }  # fmt: skip


def test_conditions_topology_and_ports() -> None:
    pods = [pod("a", "10.244.1.2"), pod("b", "10.244.1.3", ready=False),
            pod("c", "10.244.1.4", deleting=True), pod("x", "10.9.9.9")]  # fmt: skip
    groups = desired_endpoints(SVC, pods, lambda name: NODE if name == "n1" else None)
    assert list(groups) == [("IPv4", ((("name", "http"), ("port", 8080), ("protocol", "TCP")),))]
    (endpoints,) = groups.values()
    # x's IP is outside its node's pod CIDR: not published.
    assert [e["addresses"] for e in endpoints] == [["10.244.1.2"], ["10.244.1.3"], ["10.244.1.4"]]
    assert [e["conditions"] for e in endpoints] == [
        {"ready": True, "serving": True, "terminating": False},
        {"ready": False, "serving": False, "terminating": False},
        {"ready": False, "serving": True, "terminating": True},
    ]
    assert endpoints[0]["nodeName"] == "n1" and endpoints[0]["zone"] == "zone-a"
    assert endpoints[0]["targetRef"] == {"kind": "Pod", "namespace": "ns", "name": "a",
                                         "uid": "uid-a"}  # fmt: skip


def owner() -> Owner:
    return Owner("ns", "web-", {"kubernetes.io/service-name": "web"},
                 {"apiVersion": "v1", "kind": "Service", "name": "web", "uid": "u"})  # fmt: skip


def test_at_most_100_per_slice_and_endpoints_stay_put() -> None:
    key = ("IPv4", ())
    endpoints: list[dict[str, Any]] = [{"addresses": [f"10.0.{i // 200}.{i % 200 + 1}"],
                  "targetRef": {"uid": f"p{i}"}} for i in range(250)]  # fmt: skip
    first = plan(owner(), [], {key: endpoints}, 100)
    assert [len(s["endpoints"]) for s in first.create] == [100, 100, 50]
    assert not first.update and not first.delete
    existing = [{**s, "metadata": {**s["metadata"], "name": f"web-{i}"}}
                for i, s in enumerate(first.create)]  # fmt: skip
    assert all(group_key(s) == key for s in existing)
    # Nothing changed: nothing to write.
    again = plan(owner(), existing, {key: endpoints}, 100)
    assert (again.create, again.update, again.delete) == ([], [], [])
    # One pod of the first slice goes, two come: only the slices with room change.
    changed = [e for e in endpoints if e["targetRef"]["uid"] != "p0"] + [
        {"addresses": ["10.1.0.1"], "targetRef": {"uid": "new1"}},
        {"addresses": ["10.1.0.2"], "targetRef": {"uid": "new2"}},
    ]
    step = plan(owner(), existing, {key: changed}, 100)
    assert not step.create and not step.delete
    assert [s["metadata"]["name"] for s in step.update] == ["web-0", "web-2"]
    assert [len(s["endpoints"]) for s in step.update] == [100, 51]
    # No endpoint left: one placeholder slice stays, the others go.
    empty = plan(owner(), existing, {}, 100)
    assert len(empty.delete) == 3 and len(empty.create) == 1
    assert empty.create[0]["endpoints"] == [] and empty.create[0]["ports"] == []
    assert empty.create[0]["metadata"]["generateName"] == "web-"


def test_custom_endpoints_mirrored() -> None:
    endpoints = {"subsets": [{
        "addresses": [{"ip": "192.168.1.10", "nodeName": "n1"}, {"ip": "127.0.0.1"}],
        "notReadyAddresses": [{"ip": "fd00::1", "hostname": "db"}],
        "ports": [{"name": "pg", "port": 5432}],
    }]}  # fmt: skip
    groups = mirrored_endpoints(endpoints)
    port = ((("name", "pg"), ("port", 5432), ("protocol", "TCP")),)
    assert groups == {
        ("IPv4", port): [{"addresses": ["192.168.1.10"], "conditions": {"ready": True},
                          "nodeName": "n1"}],
        ("IPv6", port): [{"addresses": ["fd00::1"], "conditions": {"ready": False},
                          "hostname": "db"}],
    }  # fmt: skip
