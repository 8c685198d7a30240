"""A small kopf operator, as an operator author writes one, on a custom
kind: every Note (notes.kopf.skiff.dev, a CustomResourceDefinition) gets a
ConfigMap `<name>-note` holding its spec.text, owned by it; an update of
the Note's text updates the ConfigMap. Run by test_kopf.py with `kopf run`;
it reaches the API server only through the kubeconfig in $KUBECONFIG."""

from __future__ import annotations

from typing import Any

import kopf
import kubernetes

GROUP, VERSION, PLURAL = "kopf.skiff.dev", "v1", "notes"

kubernetes.config.load_kube_config()
core: Any = kubernetes.client.CoreV1Api()


@kopf.on.create(GROUP, VERSION, PLURAL)
def create_config_map(spec: Any, name: str, namespace: str | None, **_: Any) -> dict[str, str]:
    made = {"metadata": {"name": f"{name}-note"}, "data": {"text": str(spec.get("text", ""))}}
    kopf.adopt(made)
    core.create_namespaced_config_map(namespace or "default", made)
    return {"configMap": f"{name}-note"}


@kopf.on.update(GROUP, VERSION, PLURAL, field="spec.text")
def update_config_map(new: Any, name: str, namespace: str | None, **_: Any) -> None:
    core.patch_namespaced_config_map(
        f"{name}-note", namespace or "default", {"data": {"text": str(new or "")}}
    )
