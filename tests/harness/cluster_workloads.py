"""Manifests, waits and in-pod requests for the multi-node scenarios of the
e2e cluster tests and the VM suite."""

from __future__ import annotations

import contextlib
from typing import Any

from controlplane.client.apiclient import GrpcApiClient
from controlplane.client.interface import DeleteOptions
from tests.harness.cluster import Cluster
from tests.harness.wait import wait_for

BUSYBOX = "busybox:1.36"

# A web server answering with its pod's name (busybox httpd on :80).
WHOAMI = ["sh", "-c", "mkdir -p /w && hostname > /w/index.html && exec httpd -f -p 80 -h /w"]
SLEEPER = ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]


def container(command: list[str], **extra: Any) -> dict[str, Any]:
    return {"name": "c", "image": BUSYBOX, "command": command, **extra}


def pod(
    name: str, command: list[str], node: str | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"terminationGracePeriodSeconds": 1, "containers": [container(command)]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {"e2e": name}},
        "spec": spec,
    }


def deployment(
    name: str,
    replicas: int,
    command: list[str],
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    labels = labels or {"app": name}
    pod_spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": 1,
        "containers": [container(command)],
    }
    pod_spec.update(spec.pop("pod_spec", {}))
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
            **spec,
        },
    }


def readiness_http() -> dict[str, Any]:
    # Tolerant of a slow answer on a loaded 2-core machine, so that a pod
    # counts unready only when it really stops serving.
    return {
        "httpGet": {"path": "/", "port": 80},
        "periodSeconds": 1,
        "timeoutSeconds": 3,
        "failureThreshold": 3,
    }


def pods(api: GrpcApiClient, selector: dict[str, str]) -> list[dict[str, Any]]:
    out = []
    for p in api.list("Pod", "default").items:
        labels = p["metadata"].get("labels") or {}
        if all(labels.get(k) == v for k, v in selector.items()):
            out.append(p)
    return out


def is_ready(p: dict[str, Any]) -> bool:
    st = p.get("status") or {}
    if p["metadata"].get("deletionTimestamp") or st.get("phase") != "Running":
        return False
    conds = {c["type"]: c["status"] for c in st.get("conditions") or []}
    return conds.get("Ready") == "True" and bool(st.get("podIP"))


def brief(p: dict[str, Any]) -> str:
    st = p.get("status") or {}
    conds = {c["type"]: c["status"] for c in st.get("conditions") or []}
    deleting = " deleting" if p["metadata"].get("deletionTimestamp") else ""
    return f"{p['metadata']['name']}@{p['spec'].get('nodeName')} {st.get('phase')} ready={conds.get('Ready')}{deleting}"


def ready_pods(api: GrpcApiClient, selector: dict[str, str]) -> list[dict[str, Any]]:
    return [p for p in pods(api, selector) if is_ready(p)]


def wait_ready_pods(
    api: GrpcApiClient, selector: dict[str, str], count: int, timeout: float = 90.0
) -> list[dict[str, Any]]:
    def enough() -> list[dict[str, Any]]:
        found = ready_pods(api, selector)
        return found if len(found) == count and len(pods(api, selector)) == count else []

    return wait_for(enough, timeout=timeout, interval=0.2, message=f"{count} ready pods {selector}")


def wait_pod_running(api: GrpcApiClient, name: str, timeout: float = 90.0) -> dict[str, Any]:
    def running() -> dict[str, Any]:
        p: dict[str, Any] = api.get("Pod", name, "default")
        return p if is_ready(p) else {}

    return wait_for(running, timeout=timeout, interval=0.2, message=f"pod {name} Ready")


def fetch(cluster: Cluster, pod: dict[str, Any], url: str, timeout: int = 3) -> str:
    """GET `url` from inside `pod` (busybox wget), on the pod's node."""
    node = cluster.node(pod["spec"]["nodeName"])
    # (busybox-static's wget crashes with -T; ExecSync's timeout bounds it)
    cmd = ["wget", "-q", "-O", "-", url]
    return node.exec(pod["metadata"]["name"], cmd, timeout=timeout + 5).strip()


def delete(api: GrpcApiClient, kind: str, name: str) -> None:
    with contextlib.suppress(Exception):
        api.delete(kind, name, "default", DeleteOptions(grace_period_seconds=0))


def wait_gone(api: GrpcApiClient, selector: dict[str, str], timeout: float = 60.0) -> None:
    wait_for(
        lambda: not pods(api, selector), timeout=timeout, interval=0.2, message=f"{selector} gone"
    )
