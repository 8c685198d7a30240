"""Small API objects the tests create: a Pod (optionally bound to a node) and
a node's mirror Pod, as skiff's agent creates one for a static pod."""

from __future__ import annotations

from typing import Any


def pod(
    name: str, labels: dict[str, str] | None = None, node: str = "", **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}], **spec},
    }
    if node:
        body["spec"]["nodeName"] = node
    return body


def mirror(name: str, node: str) -> dict[str, Any]:
    body = pod(name, node=node)
    body["metadata"]["annotations"] = {
        "kubernetes.io/config.mirror": "abc",
        "kubernetes.io/config.hash": "abc",
        "kubernetes.io/config.source": "file",
    }
    return body
