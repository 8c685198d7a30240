"""The objects a pod names (Kubernetes' podutil.VisitPodSecretNames and
VisitPodConfigmapNames, with its claims and service account): what the node
authorizer lets the pod's node read (apiserver/nodegraph.py) and what the
agent watches for the pod's volumes and environment (agent/object_cache.py)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

Ref = tuple[str, str, str]  # (kind, namespace, name)


def _is_map(value: Any) -> bool:
    # A dict's type first: isinstance against the Mapping ABC costs far more.
    return type(value) is dict or isinstance(value, Mapping)


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(field) or []:
            if _is_map(c):
                yield c


def _name(ref: Any, field: str = "name") -> str:
    if ref is None:
        return ""
    return str(ref.get(field) or "") if _is_map(ref) else ""


_VOLUME_SECRET_FIELDS = ("secretRef", "nodePublishSecretRef", "nodeStageSecretRef")


def pod_references(pod: Mapping[str, Any]) -> set[Ref]:
    """Every Secret, ConfigMap, PersistentVolumeClaim and ServiceAccount a
    pod names (an ephemeral volume's claim by its generated name)."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    ns = str(meta.get("namespace") or "default")
    refs: set[tuple[str, str]] = set()
    sa = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if sa:
        refs.add(("ServiceAccount", str(sa)))
    for secret in spec.get("imagePullSecrets") or []:
        refs.add(("Secret", _name(secret)))
    for c in _containers(spec):
        for env in c.get("env") or []:
            source = (env or {}).get("valueFrom")
            if source:
                refs.add(("Secret", _name(source.get("secretKeyRef"))))
                refs.add(("ConfigMap", _name(source.get("configMapKeyRef"))))
        for env_from in c.get("envFrom") or []:
            refs.add(("Secret", _name((env_from or {}).get("secretRef"))))
            refs.add(("ConfigMap", _name((env_from or {}).get("configMapRef"))))
    pod_name = str(meta.get("name") or "")
    for volume in spec.get("volumes") or []:
        if not _is_map(volume):
            continue
        refs.add(("Secret", _name(volume.get("secret"), "secretName")))
        refs.add(("ConfigMap", _name(volume.get("configMap"))))
        refs.add(("PersistentVolumeClaim", _name(volume.get("persistentVolumeClaim"), "claimName")))
        if "ephemeral" in volume:
            refs.add(("PersistentVolumeClaim", f"{pod_name}-{volume.get('name')}"))
        for source in (volume.get("projected") or {}).get("sources") or []:
            refs.add(("Secret", _name((source or {}).get("secret"))))
            refs.add(("ConfigMap", _name((source or {}).get("configMap"))))
        for value in volume.values():  # csi, cephfs, iscsi, ... name their secret so
            if _is_map(value):
                for field in _VOLUME_SECRET_FIELDS:
                    refs.add(("Secret", _name(value.get(field))))
    return {(kind, ns, name) for kind, name in refs if name}
