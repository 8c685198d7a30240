"""ServiceLB on the in-memory API: addresses in status.loadBalancer, the
nodes that may serve, Local traffic, other classes, port conflicts."""

from __future__ import annotations

from typing import Any

from controlplane.controllers.servicelb import lb_ingress, port_conflict
from tests.fakes.endpointslices import address, endpoint_slice


def node(name: str, ip: str, ready: bool = True, labels: dict[str, str] | None = None,
         external: str = "") -> dict[str, Any]:  # fmt: skip
    addrs = [{"type": "InternalIP", "address": ip}]
    if external:
        addrs.append({"type": "ExternalIP", "address": external})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "status": {
            "addresses": addrs,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def lb(name: str, port: int = 80, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "type": "LoadBalancer",
            "selector": {"app": name},
            "ports": [{"name": "http", "port": port, "protocol": "TCP", "targetPort": 8080}],
            **spec,
        },
    }


def endpoints(name: str, nodes: list[str]) -> dict[str, Any]:
    """The Service's EndpointSlice with a ready endpoint on each of `nodes`."""
    return endpoint_slice(
        name,
        [address(f"10.244.{i}.5", node=n) for i, n in enumerate(nodes, 1)],
        [{"name": "http", "port": 8080, "protocol": "TCP"}],
    )


NODES = [node("n1", "192.168.5.11"), node("n2", "192.168.5.12"), node("n3", "192.168.5.13")]


def test_every_ready_node_serves_sorted() -> None:
    nodes = [*reversed(NODES), node("down", "192.168.5.20", ready=False),
             node("out", "192.168.5.21", labels={"node.kubernetes.io/exclude-from-external-load-balancers": ""})]  # fmt: skip
    assert lb_ingress(lb("web"), nodes, []) == [
        {"ip": "192.168.5.11"},
        {"ip": "192.168.5.12"},
        {"ip": "192.168.5.13"},
    ]


def test_external_ips_win_and_enablelb_pools() -> None:
    nodes = [node("n1", "192.168.5.11", external="203.0.113.1"), *NODES[1:]]
    assert lb_ingress(lb("web"), nodes, []) == [{"ip": "203.0.113.1"}]
    pool = [node("n1", "192.168.5.11", labels={"svccontroller.k3s.cattle.io/enablelb": "true"}),
            *NODES[1:]]  # fmt: skip
    assert lb_ingress(lb("web"), pool, []) == [{"ip": "192.168.5.11"}]


def test_local_policy_lists_only_nodes_with_endpoints() -> None:
    svc = lb("web", externalTrafficPolicy="Local")
    assert lb_ingress(svc, NODES, [endpoints("web", ["n2"])]) == [{"ip": "192.168.5.12"}]
    assert lb_ingress(svc, NODES, []) == []


def test_local_policy_merges_slices_and_skips_terminating_endpoints() -> None:
    svc = lb("web", externalTrafficPolicy="Local")
    http = [{"name": "http", "port": 8080, "protocol": "TCP"}]
    a = endpoint_slice("web", [address("10.244.1.5", node="n1")], http, name="web-a")
    b = endpoint_slice(
        "web",
        [
            address("10.244.3.5", node="n3"),
            address("10.244.2.5", node="n2", ready=False, serving=True, terminating=True),
        ],
        http,
        name="web-b",
    )
    assert lb_ingress(svc, NODES, [a, b]) == [{"ip": "192.168.5.11"}, {"ip": "192.168.5.13"}]


def test_controller_follows_the_slices_of_a_local_service(env) -> None:
    e = env("servicelb")
    for n in NODES:
        e.client.create("Node", n)
    e.client.create("Service", lb("web", externalTrafficPolicy="Local"), "default")

    def ingress() -> list[dict[str, str]]:
        svc = e.client.get("Service", "web", "default")
        return ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []

    e.client.create("EndpointSlice", endpoints("web", ["n2"]), "default")
    e.wait(lambda: ingress() == [{"ip": "192.168.5.12"}], message="n2 serves")
    s = e.client.get("EndpointSlice", "web-abcde", "default")
    s["endpoints"][0]["nodeName"] = "n3"
    e.client.update("EndpointSlice", s)
    e.wait(lambda: ingress() == [{"ip": "192.168.5.13"}], message="n3 serves after the move")


def test_port_conflicts_name_the_holder() -> None:
    older = lb("first")
    older["metadata"]["creationTimestamp"] = "2024-01-01T00:00:00Z"
    newer = lb("second")
    newer["metadata"]["creationTimestamp"] = "2024-01-02T00:00:00Z"
    assert port_conflict(older, [older, newer]) == ""
    assert port_conflict(newer, [older, newer]) == (
        "port 80/TCP is already used by LoadBalancer Service default/first"
    )
    other_class = lb("first", loadBalancerClass="example.com/metal")
    other_class["metadata"]["creationTimestamp"] = "2024-01-01T00:00:00Z"
    assert port_conflict(newer, [other_class, newer]) == ""
    udp = lb("dns", port=80)
    udp["spec"]["ports"][0]["protocol"] = "UDP"
    assert port_conflict(udp, [older, udp]) == ""
    np = lb("np", port=9999)
    np["spec"]["type"] = "NodePort"
    np["spec"]["ports"][0]["nodePort"] = 30080
    assert "nodePort of Service default/np" in port_conflict(lb("x", port=30080), [np])


def test_controller_writes_status_events_and_leaves_other_classes(env) -> None:
    e = env("servicelb")
    for n in NODES:
        e.client.create("Node", n)
    e.client.create("Service", lb("web"), "default")
    e.client.create(
        "Service", lb("metal", port=81, loadBalancerClass="example.com/metal"), "default"
    )

    def ingress(name: str) -> list[dict[str, str]]:
        svc = e.client.get("Service", name, "default")
        return ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []

    e.wait(lambda: len(ingress("web")) == 3, message="web gets every node")
    assert ingress("metal") == []
    ctl = e.controller("servicelb")
    assert "UpdatedLoadBalancer" in ctl.recorder.reasons("default/web")

    # A second Service on the same port: no address, a Warning naming the holder.
    e.tick(1.0)
    e.client.create("Service", lb("clash"), "default")
    e.wait(lambda: "PortConflict" in ctl.recorder.reasons("default/clash"), message="conflict")
    assert ingress("clash") == []
    # The holder goes: the port is free, the second gets its addresses.
    e.client.delete("Service", "web", "default")
    e.wait(lambda: len(ingress("clash")) == 3, message="clash served once free")

    # A node going NotReady leaves the list.
    n1 = e.client.get("Node", "n1")
    n1["status"]["conditions"][0]["status"] = "False"
    e.client.update_status("Node", n1)
    e.wait(lambda: len(ingress("clash")) == 2, message="n1 dropped")

    # No longer a LoadBalancer: the addresses go.
    svc = e.client.get("Service", "clash", "default")
    svc["spec"]["type"] = "ClusterIP"
    e.client.update("Service", svc)
    e.wait(lambda: ingress("clash") == [], message="cleared")

    # Another writer's addresses on a Service that was never ours stay.
    e.client.create("Service", {**lb("plain", port=82), "spec": {
        "type": "ClusterIP", "ports": [{"port": 82, "protocol": "TCP"}]}}, "default")  # fmt: skip
    plain = e.client.get("Service", "plain", "default")
    plain["status"] = {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}
    e.client.update_status("Service", plain)
    e.client.create("Service", lb("late", port=83), "default")
    e.wait(lambda: len(ingress("late")) == 2, message="a later Service served (queue drained)")
    assert ingress("plain") == [{"ip": "192.0.2.1"}]
