"""EndpointSlice (discovery.k8s.io/v1) from its one module
(controlplane/api/kinds/discovery/endpointslice.py): validation as
Kubernetes' ValidateEndpointSlice writes it, defaults, and the columns of
`kubectl get endpointslices`."""

from __future__ import annotations

from typing import Any

from controlplane.api import kinds
from controlplane.api.defaults import apply_defaults
from controlplane.api.validation import validate
from controlplane.apiserver.rest import discovery


def eps(**fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": "web-abc", "namespace": "default"},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.244.1.5"], "conditions": {"ready": True}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        **fields,
    }


def test_served_in_discovery_k8s_io_v1() -> None:
    info = kinds.lookup("endpointslices")
    assert (info.kind, info.api_version, info.namespaced, info.has_status) == (
        "EndpointSlice", "discovery.k8s.io/v1", True, False)  # fmt: skip
    listed = discovery.resource_list("discovery.k8s.io/v1")
    assert listed is not None
    assert [r["name"] for r in listed["resources"]] == ["endpointslices"]


def test_valid_slice_passes_and_ports_are_defaulted() -> None:
    assert validate("EndpointSlice", eps()) == []
    obj = eps(ports=[{"port": 53}])
    apply_defaults("EndpointSlice", obj)
    assert obj["ports"] == [{"port": 53, "name": "", "protocol": "TCP"}]


def test_errors_as_kubernetes_writes_them() -> None:
    bad = eps(
        addressType="IPv5",
        endpoints=[{"addresses": []}, {"addresses": ["10.0.0.1"], "hostname": "Bad_Host"}],
        ports=[{"name": "a", "protocol": "TCP"}, {"name": "a", "protocol": "ICMP"}],
    )
    assert validate("EndpointSlice", bad) == [
        "endpoints[0].addresses: Required value: must contain at least 1 address",
        'endpoints[1].hostname: Invalid value: "Bad_Host": a lowercase RFC 1123 label must '
        "consist of lower case alphanumeric characters or '-', and must start and end with an "
        "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        'ports[1].name: Duplicate value: "a"',
        'ports[1].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
        'addressType: Unsupported value: "IPv5": supported values: "FQDN", "IPv4", "IPv6"',
    ]
    assert validate("EndpointSlice", eps(addressType=None)) == ["addressType: Required value"]
    ips = eps(endpoints=[{"addresses": ["fe80::1", "127.0.0.1", "10.1.2"]}])
    assert validate("EndpointSlice", ips) == [
        'endpoints[0].addresses[0]: Invalid value: "fe80::1": must be a valid IPv4 address',
        'endpoints[0].addresses[1]: Invalid value: "127.0.0.1": may not be in the loopback '
        "range (127.0.0.0/8, ::1/128)",
        'endpoints[0].addresses[2]: Invalid value: "10.1.2": must be a valid IPv4 address',
    ]
    many = eps(endpoints=[{"addresses": [f"10.0.{i // 250}.{i % 250 + 1}" for i in range(101)]}])
    assert validate("EndpointSlice", many) == [
        "endpoints[0].addresses: Too many: 101: must have at most 100 items"
    ]


def test_address_type_is_immutable() -> None:
    assert validate("EndpointSlice", eps(addressType="IPv6", endpoints=[]), eps()) == [
        'addressType: Invalid value: "IPv6": field is immutable'
    ]


def test_columns_as_kubectl_prints_them() -> None:
    printer = kinds.definition("EndpointSlice").printer
    assert printer is not None
    assert printer.headers(False) == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    five = eps(
        ports=[{"port": 80}, {"name": "dns"}, {}, {"port": 9}],
        endpoints=[{"addresses": [f"10.0.0.{i}"]} for i in range(1, 6)],
    )
    assert printer.row(five, 0, False)[1:4] == [
        "IPv4", "80,dns,* + 1 more...", "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more..."]  # fmt: skip
    assert printer.row(eps(ports=[], endpoints=[]), 0, False)[2:4] == ["<unset>", "<unset>"]
