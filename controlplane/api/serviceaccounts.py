"""ServiceAccount admission for pods, as Kubernetes' ServiceAccount plugin does it.

A new pod (not a mirror pod) runs as `spec.serviceAccountName` (default
`default`). Unless it opts out (`automountServiceAccountToken: false`) or
already mounts something at the token path, it gets the projected volume
`kube-api-access` (Kubernetes adds a random suffix; a fixed name keeps pods
made from one template identical, and a suffix is added only on a clash): a bound ServiceAccount token (TokenRequest,
refreshed by the agent), the cluster CA from the ConfigMap
kube-root-ca.crt (published in every namespace by a controller) and the
pod's namespace, mounted read-only at
/var/run/secrets/kubernetes.io/serviceaccount in every container, so
in-cluster clients (`load_incluster_config()`) find what they need. The CA
source is optional so that a pod still starts before the ConfigMap exists.
"""

from __future__ import annotations

from typing import Any

MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
VOLUME_NAME = "kube-api-access"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
TOKEN_EXPIRATION = 3607  # Kubernetes' default: an hour and a bit
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


def access_volume(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "projected": {
            "defaultMode": 0o644,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION, "path": "token"}},
                {"configMap": {"name": ROOT_CA_CONFIGMAP, "optional": True,
                               "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                    "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ],
        },
    }  # fmt: skip


def admit(pod: dict[str, Any]) -> None:
    """Default the account and add the token volume to a new pod (in place)."""
    meta = pod.get("metadata") or {}
    if MIRROR_ANNOTATION in (meta.get("annotations") or {}):
        return  # a static pod's mirror: the API server gives it nothing
    spec = pod.setdefault("spec", {})
    account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    spec["serviceAccountName"] = account
    if spec.get("automountServiceAccountToken") is False:
        return
    containers = [c for field in ("initContainers", "containers", "ephemeralContainers")
                  for c in spec.get(field) or [] if isinstance(c, dict)]  # fmt: skip
    for c in containers:
        for mount in c.get("volumeMounts") or []:
            if isinstance(mount, dict) and mount.get("mountPath") == MOUNT_PATH:
                return
    taken = {v.get("name") for v in spec.get("volumes") or [] if isinstance(v, dict)}
    name, n = VOLUME_NAME, 1
    while name in taken:
        n += 1
        name = f"{VOLUME_NAME}-{n}"
    spec.setdefault("volumes", []).append(access_volume(name))
    for c in containers:
        c.setdefault("volumeMounts", []).append(
            {"name": name, "mountPath": MOUNT_PATH, "readOnly": True}
        )
