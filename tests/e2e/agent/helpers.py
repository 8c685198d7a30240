"""Pods and status reads for the agent's end-to-end tests."""

from __future__ import annotations

import json
import sys
import urllib.request
from dataclasses import dataclass
from typing import Any

from controlplane.client.apiclient import GrpcApiClient
from controlplane.client.interface import DeleteOptions
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


@dataclass(frozen=True)
class E2EImages:
    """Image names as pods use them (docker.io, through the mirror)."""

    busybox: str
    web: str


def dump(admin: GrpcApiClient, n: Node) -> None:
    """On failure: the node's daemon logs and its pods' status, on stderr."""
    lines = [n.logs()]
    try:
        for p in admin.list("Pod", "default").items:
            if (p.get("spec") or {}).get("nodeName") == n.spec.name:
                lines.append(f"--- pod {p['metadata']['name']}: {json.dumps(p.get('status'))}")
    except Exception as exc:  # diagnostics only
        lines.append(f"(pods not listed: {exc})")
    sys.stderr.write("\n".join(lines) + "\n")


def delete_node_pods(admin: GrpcApiClient, node_name: str) -> None:
    """Delete this node's pods while its agent still runs (so it stops them
    as in a cluster); the node's cleanup removes anything left behind."""
    for p in admin.list("Pod", "default").items:
        if (p.get("spec") or {}).get("nodeName") == node_name:
            try:
                admin.delete(
                    "Pod", p["metadata"]["name"], "default", DeleteOptions(grace_period_seconds=0)
                )
            except Exception:  # already gone is fine
                pass
