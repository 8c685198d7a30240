"""A small kopf operator, as an operator author writes one: every ConfigMap
labelled skiff-test=source gets a ConfigMap `<name>-copy` with its data,
owned by it; an update of the source updates the copy. Run by
test_kopf.py with `kopf run`; it reaches the API server only through the
kubeconfig in $KUBECONFIG."""

from __future__ import annotations

from typing import Any

import kopf
import kubernetes

kubernetes.config.load_kube_config()
core: Any = kubernetes.client.CoreV1Api()


@kopf.on.create("configmaps", labels={"skiff-test": "source"})
def create_copy(body: Any, name: str, namespace: str | None, **_: Any) -> dict[str, str]:
    copy = {"metadata": {"name": f"{name}-copy"}, "data": dict(body.get("data") or {})}
    kopf.append_owner_reference(copy)  # not adopt(): that copies the labels too
    core.create_namespaced_config_map(namespace or "default", copy)
    return {"copy": f"{name}-copy"}


@kopf.on.update("configmaps", labels={"skiff-test": "source"}, field="data")
def update_copy(new: Any, name: str, namespace: str | None, **_: Any) -> None:
    core.patch_namespaced_config_map(
        f"{name}-copy", namespace or "default", {"data": dict(new or {})}
    )
