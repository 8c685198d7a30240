"""Kubernetes defaults for the fields skiff supports, per kind.

`apply_defaults(kind, obj)` fills in what the Kubernetes API server would
fill in on create and update (restartPolicy Always, replicas 1, RollingUpdate
25%/25%, Service port protocol TCP and targetPort = port, ...). It mutates
`obj` in place and never removes or rewrites a value the user set. Pure:
no storage access (things that need other objects, such as a Pod's priority
from its PriorityClass or a Service's clusterIP, are done by the API server).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controlplane.api import crd, crd_validation, kinds, volcano

Object = dict[str, Any]


def _d(obj: Object, key: str) -> Object:
    """obj[key] as a dict, created if missing.

    A value of the wrong type is left alone (validation reports it); the
    caller then fills a detached dict.
    """
    value = obj.get(key)
    if value is None:
        value = {}
        obj[key] = value
    elif not isinstance(value, dict):
        return {}
    return value


def _items(value: Any) -> list[Any]:
    """A list field's items; a value of another type is left to validation."""
    return value if isinstance(value, list) else []


def storageclass(obj: Object) -> None:
    obj.setdefault("reclaimPolicy", "Delete")
    obj.setdefault("volumeBindingMode", "Immediate")


DEFAULTERS: dict[str, Callable[[Object], None]] = {
    "CustomResourceDefinition": crd_validation.default_crd,
    "StorageClass": storageclass,
    "PodGroup": volcano.default_podgroup,
    "Queue": volcano.default_queue,
    volcano.JOB_KEY: volcano.default_job,
}


def apply_defaults(kind: str, obj: Object) -> None:
    """Fill in Kubernetes defaults for `kind` in place."""
    definition = kinds.find(kind)
    defaulter = (definition.defaults if definition else None) or DEFAULTERS.get(kind)
    if defaulter is not None:
        defaulter(obj)
    elif crd.is_custom(kind):
        crd.default_object(kind, obj)
