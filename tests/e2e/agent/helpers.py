"""Pods and status reads for the agent's end-to-end tests."""

from __future__ import annotations

import urllib.request
from typing import Any

from controlplane.client.apiclient import GrpcApiClient
from tests.harness.nodeprocs import Node
from tests.harness.wait import wait_for


def pod(name: str, node: Node, containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    """A Pod bound to `node` (no scheduler needed)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"e2e": node.spec.name}},
        "spec": {
            "nodeName": node.spec.name,
            "terminationGracePeriodSeconds": 2,
            "containers": containers,
            **spec,
        },
    }


def status(api: GrpcApiClient, name: str) -> dict[str, Any]:
    st: dict[str, Any] = api.get("Pod", name, "default").get("status") or {}
    return st


def container_status(api: GrpcApiClient, name: str, container: str = "c") -> dict[str, Any]:
    for cs in status(api, name).get("containerStatuses") or []:
        if cs.get("name") == container:
            found: dict[str, Any] = cs
            return found
    return {}


def condition(st: dict[str, Any], kind: str) -> dict[str, Any]:
    for c in st.get("conditions") or []:
        if c.get("type") == kind:
            found: dict[str, Any] = c
            return found
    return {}


def wait_running(api: GrpcApiClient, name: str, timeout: float = 60.0) -> dict[str, Any]:
    def running() -> dict[str, Any]:
        st = status(api, name)
        return st if st.get("phase") == "Running" and st.get("podIP") else {}

    return wait_for(running, timeout=timeout, message=f"pod {name} Running with an IP")


_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy


def http_get(url: str, timeout: float = 2.0) -> str:
    with _DIRECT.open(url, timeout=timeout) as resp:
        body: bytes = resp.read()
        return body.decode()
