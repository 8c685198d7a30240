"""The ingress controller's backends come from the Service's EndpointSlices."""

from __future__ import annotations

from typing import Any

from agent.ingress.model import CONTROLLER, build
from controlplane.client.endpointslices import group_by_service
from tests.fakes.endpointslices import address, endpoint_slice

CLASS = {"metadata": {"name": "skiff"}, "spec": {"controller": CONTROLLER}}


def service() -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "ports": [
                {"name": "http", "port": 80, "protocol": "TCP"},
                {"name": "admin", "port": 81, "protocol": "TCP"},
            ]
        },
    }


def ingress(port: dict[str, Any]) -> dict[str, Any]:
    backend = {"service": {"name": "web", "port": port}}
    return {
        "metadata": {
            "name": "web",
            "namespace": "default",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"ingressClassName": "skiff", "defaultBackend": backend},
    }


def servers(port: dict[str, Any], slices: list[dict[str, Any]]) -> list[tuple[str, int]]:
    cfg = build(
        [ingress(port)],
        [CLASS],
        {"default/web": service()},
        group_by_service(slices),
        lambda ns, name: None,
    )
    [backend] = cfg.backends.values()
    return list(backend.servers)


PORTS = [
    {"name": "http", "port": 8080, "protocol": "TCP"},
    {"name": "admin", "port": 9090, "protocol": "TCP"},
]


def test_backends_merge_the_slices_and_take_ready_endpoints_of_the_named_port() -> None:
    slices = [
        endpoint_slice(
            "web",
            [address("10.244.1.2"), address("10.244.1.3", ready=False, terminating=True)],
            PORTS,
            name="web-a",
        ),
        endpoint_slice("web", [address("10.244.2.2")], PORTS, name="web-b"),
        endpoint_slice("other", [address("10.244.9.9")], PORTS, name="other-a"),
    ]
    assert servers({"number": 80}, slices) == [("10.244.1.2", 8080), ("10.244.2.2", 8080)]
    assert servers({"name": "admin"}, slices) == [("10.244.1.2", 9090), ("10.244.2.2", 9090)]
    assert servers({"number": 80}, []) == []
