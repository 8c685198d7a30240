from __future__ import annotations

from agent.proxy.conntrack import stale_udp_flows
from agent.proxy.model import Endpoint, ServicePort


def port(eps: list[str], protocol: str = "UDP", node_port: int = 0) -> ServicePort:
    return ServicePort(
        namespace="kube-system",
        name="dns",
        port_name="dns",
        protocol=protocol,
        cluster_ip="10.43.0.53",
        port=53,
        node_port=node_port,
        affinity_timeout=0,
        external_local=False,
        internal_local=False,
        endpoints=tuple(Endpoint(ip, 53) for ip in eps),
    )


def test_removed_udp_endpoint_flows_are_cleared() -> None:
    old, new = [port(["10.244.1.2", "10.244.1.3"])], [port(["10.244.1.3"])]
    assert stale_udp_flows(old, new) == [
        ("-p", "udp", "--orig-dst", "10.43.0.53", "--dst-nat", "10.244.1.2")
    ]


def test_removed_service_and_node_port() -> None:
    old = [port(["10.244.1.2"], node_port=30053)]
    assert stale_udp_flows(old, []) == [
        ("-p", "udp", "--orig-dst", "10.43.0.53", "--dst-nat", "10.244.1.2"),
        ("-p", "udp", "--orig-port-dst", "30053", "--dst-nat", "10.244.1.2"),
    ]


def test_first_endpoint_clears_flows_made_without_dnat() -> None:
    assert stale_udp_flows([port([])], [port(["10.244.1.2"])]) == [
        ("-p", "udp", "--orig-dst", "10.43.0.53")
    ]


def test_tcp_and_unchanged_ports_need_nothing() -> None:
    assert stale_udp_flows([port(["10.244.1.2"], "TCP")], [port([], "TCP")]) == []
    same = [port(["10.244.1.2"])]
    assert stale_udp_flows(same, same) == []
