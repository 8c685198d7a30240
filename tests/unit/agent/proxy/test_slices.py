"""The service proxy's view of EndpointSlices: merged per Service, matched by
port name, with kube-proxy's ready/serving/terminating rules."""

from __future__ import annotations

from typing import Any

from agent.proxy import rules
from agent.proxy.healthcheck import health_targets
from agent.proxy.model import Endpoint, ServicePort, service_ports, slice_source
from controlplane.client.endpointslices import group_by_service
from tests.fakes.endpointslices import address, endpoint_slice

HTTP = {"name": "http", "port": 8080, "protocol": "TCP"}
METRICS = {"name": "metrics", "port": 9090, "protocol": "TCP"}


def svc(name: str = "web", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "ClusterIP",
        "clusterIP": "10.43.0.20",
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
    }
    body.update(spec)
    return {"metadata": {"name": name, "namespace": "default"}, "spec": body}


def ports_of(services: list[dict[str, Any]], slices: list[dict[str, Any]]) -> list[ServicePort]:
    return service_ports(services, slice_source(group_by_service(slices)))


def generate(services: list[dict[str, Any]], slices: list[dict[str, Any]], node: str) -> str:
    ports = ports_of(services, slices)
    return rules.restore_text(
        rules.build_rules(ports, rules.RuleConfig(node_name=node)), rules.Existing()
    )


def chain_rules(text: str, chain: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(f"-A {chain} ")]


def test_the_slices_of_a_service_are_merged_and_others_ignored() -> None:
    a = endpoint_slice("web", ["10.244.1.2"], [HTTP], name="web-a")
    b = endpoint_slice("web", ["10.244.1.3", "10.244.1.2"], [HTTP], name="web-b")
    other = endpoint_slice("api", ["10.244.9.9"], [HTTP], name="api-a")
    unlabelled = endpoint_slice("web", ["10.244.8.8"], [HTTP], name="stray")
    del unlabelled["metadata"]["labels"]
    v6 = endpoint_slice("web", ["fd00::1"], [HTTP], name="web-v6", address_type="IPv6")
    deleting = endpoint_slice("web", ["10.244.7.7"], [HTTP], name="web-old")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    [sp] = ports_of([svc()], [a, b, other, unlabelled, v6, deleting])
    assert [(e.ip, e.port) for e in sp.endpoints] == [("10.244.1.2", 8080), ("10.244.1.3", 8080)]


def test_two_ports_match_their_slice_ports_by_name_and_protocol() -> None:
    service = svc(
        ports=[
            {"name": "http", "port": 80, "protocol": "TCP"},
            {"name": "metrics", "port": 9000, "protocol": "TCP"},
        ]
    )
    udp_metrics = {"name": "metrics", "port": 9999, "protocol": "UDP"}
    s = endpoint_slice("web", ["10.244.1.2"], [HTTP, METRICS, udp_metrics])
    http, metrics = ports_of([service], [s])
    assert (http.port_name, [e.port for e in http.endpoints]) == ("http", [8080])
    assert (metrics.port_name, [e.port for e in metrics.endpoints]) == ("metrics", [9090])
    text = generate([service], [s], "n1")
    assert "--to-destination 10.244.1.2:8080" in text
    assert "--to-destination 10.244.1.2:9090" in text
    assert "9999" not in text


def test_conditions_as_kube_proxy_reads_them() -> None:
    unset = address("10.244.1.2")
    unset["conditions"] = {}  # ready and serving unset count as true
    not_ready = address("10.244.1.3", ready=False)
    draining = address("10.244.1.4", ready=False, serving=True, terminating=True)
    gone = address("10.244.1.5", ready=False, serving=False, terminating=True)
    [sp] = ports_of([svc()], [endpoint_slice("web", [unset, not_ready, draining, gone], [HTTP])])
    assert [e.ip for e in sp.endpoints] == ["10.244.1.2", "10.244.1.4"]
    assert [e.ip for e in sp.cluster_endpoints] == ["10.244.1.2"]  # ready ones win


def test_serving_terminating_endpoints_are_used_when_none_is_ready() -> None:
    draining = address("10.244.1.4", node="n2", ready=False, serving=True, terminating=True)
    s = endpoint_slice("web", [draining], [HTTP])
    [sp] = ports_of([svc()], [s])
    assert sp.cluster_endpoints == (Endpoint("10.244.1.4", 8080, "n2", False, True, True),)
    assert "--to-destination 10.244.1.4:8080" in generate([svc()], [s], "n1")
    stopped = address("10.244.1.4", ready=False, serving=False, terminating=True)
    text = generate([svc()], [endpoint_slice("web", [stopped], [HTTP])], "n1")
    assert "has no endpoints" in text and "--to-destination" not in text


def local_service() -> dict[str, Any]:
    return svc(
        type="LoadBalancer",
        ports=[{"name": "http", "port": 80, "protocol": "TCP", "nodePort": 30080}],
        externalTrafficPolicy="Local",
        healthCheckNodePort=32000,
    )


def test_local_policy_falls_back_to_this_nodes_terminating_endpoints() -> None:
    """ProxyTerminatingEndpoints: n1's only pod is terminating (still serving)
    while n2 has a ready one: n1's NodePort keeps sending to its own draining
    pod instead of dropping, and its health check says 503 so the load
    balancer drains n1."""
    slices = [
        endpoint_slice(
            "web",
            [
                address("10.244.1.4", node="n1", ready=False, serving=True, terminating=True),
                address("10.244.2.2", node="n2"),
            ],
            [HTTP],
        )
    ]
    [sp] = ports_of([local_service()], slices)
    assert [e.ip for e in sp.local_endpoints("n1")] == ["10.244.1.4"]
    assert [e.ip for e in sp.local_endpoints("n2")] == ["10.244.2.2"]  # ready wins on n2
    assert [e.ip for e in sp.cluster_endpoints] == ["10.244.2.2"]
    text = generate([local_service()], slices, "n1")
    [_masq, jump] = chain_rules(text, "SKIFF-NODEPORTS")
    svl = jump.split("-j ")[-1]
    assert svl.startswith("SKIFF-SVL-")
    [sep] = chain_rules(text, svl)
    sep_chain = sep.split("-j ")[-1]
    assert any("10.244.1.4:8080" in r for r in chain_rules(text, sep_chain))
    assert "has no local endpoints" not in text
    source = slice_source(group_by_service(slices))
    assert health_targets([local_service()], source, "n1")[32000].local_endpoints == 0
    assert health_targets([local_service()], source, "n2")[32000].local_endpoints == 1


def test_local_policy_without_any_local_endpoint_drops() -> None:
    slices = [endpoint_slice("web", [address("10.244.2.2", node="n2")], [HTTP])]
    text = generate([local_service()], slices, "n1")
    assert "SKIFF-SVL-" not in text
    assert any(
        "has no local endpoints" in r and r.endswith("-j DROP")
        for r in chain_rules(text, "SKIFF-EXTERNAL-SERVICES")
    )


def test_an_address_in_two_slices_counts_once_preferring_the_ready_copy() -> None:
    old = endpoint_slice("web", [address("10.244.1.2", ready=False)], [HTTP], name="web-a")
    new = endpoint_slice("web", [address("10.244.1.2", node="n1")], [HTTP], name="web-b")
    [sp] = ports_of([svc()], [old, new])
    assert sp.endpoints == (Endpoint("10.244.1.2", 8080, "n1", True, True, False),)
