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


def _probe(probe: Any) -> None:
    if isinstance(probe, dict):
        probe.setdefault("timeoutSeconds", 1)
        probe.setdefault("periodSeconds", 10)
        probe.setdefault("successThreshold", 1)
        probe.setdefault("failureThreshold", 3)


def _container(c: Any) -> None:
    if not isinstance(c, dict):
        return
    image = str(c.get("image", ""))
    if "imagePullPolicy" not in c:
        last = image.rsplit("/", 1)[-1]
        tagged = ":" in last or "@" in image
        latest = last.endswith(":latest") or not tagged
        c["imagePullPolicy"] = "Always" if latest and "@" not in image else "IfNotPresent"
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    c.setdefault("resources", {})
    for port in _items(c.get("ports")):
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for name in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(c.get(name))


def pod_spec(spec: Object) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    for key in ("containers", "initContainers"):
        for c in _items(spec.get(key)):
            _container(c)


def _template(obj: Object, *path: str) -> None:
    current = obj
    for key in path:
        current = _d(current, key)
    pod_spec(_d(_d(current, "template"), "spec"))


def pod(obj: Object) -> None:
    spec = _d(obj, "spec")
    pod_spec(spec)
    # DefaultTolerationSeconds: tolerate a not-ready/unreachable node for 300 s.
    tolerations = spec.setdefault("tolerations", [])
    if isinstance(tolerations, list):
        keys = {t.get("key") for t in tolerations if isinstance(t, dict)}
        for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
            if key not in keys:
                tolerations.append(
                    {"key": key, "operator": "Exists", "effect": "NoExecute",
                     "tolerationSeconds": 300}
                )  # fmt: skip


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


def service(obj: Object) -> None:
    spec = _d(obj, "spec")
    spec.setdefault("type", "ClusterIP")
    if spec["type"] == "ExternalName":
        return
    spec.setdefault("sessionAffinity", "None")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    if spec["type"] in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if spec["type"] == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
    for port in _items(spec.get("ports")):
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if "port" in port:
                port.setdefault("targetPort", port["port"])


def endpoints(obj: Object) -> None:
    for subset in _items(obj.get("subsets")):
        if isinstance(subset, dict):
            for port in _items(subset.get("ports")):
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")


def namespace(obj: Object) -> None:
    spec = _d(obj, "spec")
    spec.setdefault("finalizers", ["kubernetes"])
    _d(obj, "status").setdefault("phase", "Active")


def secret(obj: Object) -> None:
    obj.setdefault("type", "Opaque")


def priorityclass(obj: Object) -> None:
    obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
    obj.setdefault("globalDefault", False)


def persistentvolume(obj: Object) -> None:
    spec = _d(obj, "spec")
    spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
    spec.setdefault("volumeMode", "Filesystem")
    _d(obj, "status").setdefault("phase", "Pending")


def persistentvolumeclaim(obj: Object) -> None:
    spec = _d(obj, "spec")
    spec.setdefault("volumeMode", "Filesystem")
    _d(obj, "status").setdefault("phase", "Pending")


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
    "Pod": pod,
    "ReplicaSet": replicaset,
    "Deployment": deployment,
    "StatefulSet": statefulset,
    "DaemonSet": daemonset,
    "Job": job,
    "CronJob": cronjob,
    "Service": service,
    "Endpoints": endpoints,
    "Namespace": namespace,
    "Secret": secret,
    "PriorityClass": priorityclass,
    "PersistentVolume": persistentvolume,
    "PersistentVolumeClaim": persistentvolumeclaim,
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
