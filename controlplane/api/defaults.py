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
from controlplane.api.kinds.shared.podspec import defaults as pod_spec
from controlplane.api.kinds.shared.podspec import template_defaults as _template

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


def replicaset(obj: Object) -> None:
    spec = _d(obj, "spec")
    spec.setdefault("replicas", 1)
    _template(obj, "spec")


def deployment(obj: Object) -> None:
    spec = _d(obj, "spec")
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    strategy = _d(spec, "strategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _d(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    _template(obj, "spec")


def statefulset(obj: Object) -> None:
    spec = _d(obj, "spec")
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    spec.setdefault("revisionHistoryLimit", 10)
    strategy = _d(spec, "updateStrategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        _d(strategy, "rollingUpdate").setdefault("partition", 0)
    _template(obj, "spec")
    statefulset_claims(obj)


def daemonset(obj: Object) -> None:
    spec = _d(obj, "spec")
    spec.setdefault("revisionHistoryLimit", 10)
    strategy = _d(spec, "updateStrategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _d(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    _template(obj, "spec")


def job_spec(spec: Object) -> None:
    if "completions" not in spec and "parallelism" not in spec:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    pod_spec(_d(_d(spec, "template"), "spec"))


def job(obj: Object) -> None:
    job_spec(_d(obj, "spec"))


def cronjob(obj: Object) -> None:
    spec = _d(obj, "spec")
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    job_template = _d(spec, "jobTemplate")
    job_spec(_d(job_template, "spec"))


def storageclass(obj: Object) -> None:
    obj.setdefault("reclaimPolicy", "Delete")
    obj.setdefault("volumeBindingMode", "Immediate")


def statefulset_claims(obj: Object) -> None:
    spec = _d(obj, "spec")
    policy = _d(spec, "persistentVolumeClaimRetentionPolicy")
    policy.setdefault("whenDeleted", "Retain")
    policy.setdefault("whenScaled", "Retain")
    for template in _items(spec.get("volumeClaimTemplates")):
        if isinstance(template, dict):
            _d(template, "spec").setdefault("volumeMode", "Filesystem")


DEFAULTERS: dict[str, Callable[[Object], None]] = {
    "CustomResourceDefinition": crd_validation.default_crd,
    "ReplicaSet": replicaset,
    "Deployment": deployment,
    "StatefulSet": statefulset,
    "DaemonSet": daemonset,
    "Job": job,
    "CronJob": cronjob,
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
