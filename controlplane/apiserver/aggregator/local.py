"""The local APIServices: one for every group/version this server serves.

kube-apiserver's autoregister controller keeps an APIService without a
service for each built-in group/version (labelled
`kube-aggregator.kubernetes.io/automanaged: onstart`) and one for each
CustomResourceDefinition's (`automanaged: "true"`), with the priorities of
its table (the core group first, then apps, ...; custom groups at
1000/100). `wanted(group_versions)` is that set; an APIService a user wrote
with a service for the same group/version is theirs and left alone.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.kinds.apiregistration.apiservice import GROUP

AUTOMANAGED = "kube-aggregator.kubernetes.io/automanaged"

# kube-apiserver's apiVersionPriorities: group -> (groupPriorityMinimum, versionPriority).
PRIORITIES: dict[str, tuple[int, int]] = {
    "": (18000, 1),
    "apps": (17800, 15),
    "events.k8s.io": (17750, 15),
    "authentication.k8s.io": (17700, 15),
    "authorization.k8s.io": (17600, 15),
    "autoscaling": (17500, 15),
    "batch": (17400, 15),
    "certificates.k8s.io": (17300, 15),
    "networking.k8s.io": (17200, 15),
    "policy": (17100, 15),
    "rbac.authorization.k8s.io": (17000, 15),
    "storage.k8s.io": (16800, 15),
    "apiextensions.k8s.io": (16700, 15),
    "admissionregistration.k8s.io": (16700, 15),
    "scheduling.k8s.io": (16600, 15),
    "coordination.k8s.io": (16500, 15),
    "node.k8s.io": (16300, 15),
    "discovery.k8s.io": (16200, 15),
    "flowcontrol.apiserver.k8s.io": (16100, 21),
    GROUP: (18000, 15),  # served by the aggregator itself
    "metrics.k8s.io": (100, 100),  # metrics-server's own APIService says so
}
CUSTOM = (1000, 100)  # a CRD's group/version


def name_of(group_version: str) -> str:
    group, _, version = group_version.rpartition("/")
    return f"{version}.{group}"


def local_apiservice(group_version: str, builtin: bool) -> dict[str, Any]:
    group, _, version = group_version.rpartition("/")
    minimum, priority = PRIORITIES.get(group, CUSTOM) if builtin else CUSTOM
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "APIService",
        "metadata": {
            "name": name_of(group_version),
            "labels": {AUTOMANAGED: "onstart" if builtin else "true"},
        },
        "spec": {
            "group": group,
            "version": version,
            "groupPriorityMinimum": minimum,
            "versionPriority": priority,
        },
    }


def is_automanaged(obj: dict[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels.get(AUTOMANAGED) in ("onstart", "true")
