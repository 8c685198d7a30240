"""Validation of objects, per kind, with Kubernetes' rules for the fields skiff supports.

`validate(kind, obj, old)` returns a list of messages, each naming the field
path and the problem (`spec.replicas: must be >= 0`); an empty list means
valid. `old` is the stored object on update, for immutability rules. Unknown
fields are not errors: they are kept as the manifest has them. Pure functions:
no storage access, never mutates the object.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from controlplane.api import crd, crd_validation, kinds, rbac, volcano
from controlplane.api.checks import Errors, is_qualified_name
from controlplane.api.checks import enum as _enum
from controlplane.api.checks import integer as _int
from controlplane.api.checks import items as _list
from controlplane.api.checks import mapping as _dict
from controlplane.api.checks import percent_or_int as _percent_or_int
from controlplane.api.checks import selector as _selector
from controlplane.api.dnsnames import is_dns_label
from controlplane.api.kinds import KindInfo
from controlplane.api.kinds.shared import meta, podspec
from controlplane.api.kinds.shared.claims import validate_spec as _claim_spec
from controlplane.api.quantity import parse_quantity

Object = dict[str, Any]

_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_CRON_FIELD = re.compile(r"^[\d*/,\-A-Za-z?LW#]+$")


# -- pods ------------------------------------------------------------------------


# -- kinds -----------------------------------------------------------------------


def _replicas(e: Errors, spec: Object) -> None:
    _int(e, "spec.replicas", spec.get("replicas"), 0)


def _workload(e: Errors, obj: Object, old: Object | None, restart: tuple[str, ...]) -> None:
    spec: Any = obj.get("spec")
    if not _dict(e, "spec", spec, required=True):
        return
    _replicas(e, spec)
    _int(e, "spec.minReadySeconds", spec.get("minReadySeconds"), 0)
    _int(e, "spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"), 0)
    _selector(e, "spec.selector", spec.get("selector"))
    podspec.validate_template(
        e, "spec.template", spec.get("template"), spec.get("selector"), restart
    )
    if old is not None and (old.get("spec") or {}).get("selector") != spec.get("selector"):
        e.add("spec.selector", "field is immutable")


def _replicaset(e: Errors, obj: Object, old: Object | None) -> None:
    _workload(e, obj, old, ("Always",))


def _deployment(e: Errors, obj: Object, old: Object | None) -> None:
    _workload(e, obj, old, ("Always",))
    spec: Any = obj.get("spec")
    if not isinstance(spec, dict):
        return
    strategy: Any = spec.get("strategy")
    if _dict(e, "spec.strategy", strategy):
        _enum(e, "spec.strategy.type", strategy.get("type"), ("RollingUpdate", "Recreate"))
        rolling: Any = strategy.get("rollingUpdate")
        if strategy.get("type") == "Recreate" and rolling:
            e.add(
                "spec.strategy.rollingUpdate", "may not be specified when strategy type is Recreate"
            )
        if _dict(e, "spec.strategy.rollingUpdate", rolling):
            _percent_or_int(
                e, "spec.strategy.rollingUpdate.maxUnavailable", rolling.get("maxUnavailable")
            )
            _percent_or_int(e, "spec.strategy.rollingUpdate.maxSurge", rolling.get("maxSurge"))
            if rolling.get("maxUnavailable") in (0, "0%") and rolling.get("maxSurge") in (0, "0%"):
                e.add("spec.strategy.rollingUpdate.maxUnavailable",
                      "may not be 0 when maxSurge is 0")  # fmt: skip
    _int(e, "spec.progressDeadlineSeconds", spec.get("progressDeadlineSeconds"), 1)


def _statefulset(e: Errors, obj: Object, old: Object | None) -> None:
    _workload(e, _with_claim_volumes(e, obj), old, ("Always",))
    spec: Any = obj.get("spec")
    if isinstance(spec, dict):
        _statefulset_claims(e, spec)
        _enum(e, "spec.podManagementPolicy", spec.get("podManagementPolicy"),
              ("OrderedReady", "Parallel"))  # fmt: skip
        strategy: Any = spec.get("updateStrategy")
        if _dict(e, "spec.updateStrategy", strategy):
            _enum(
                e, "spec.updateStrategy.type", strategy.get("type"), ("RollingUpdate", "OnDelete")
            )


def _daemonset(e: Errors, obj: Object, old: Object | None) -> None:
    spec: Any = obj.get("spec")
    if isinstance(spec, dict) and "replicas" in spec:
        e.add("spec.replicas", "not a DaemonSet field (one pod runs per eligible node)")
    _workload(e, obj, old, ("Always",))
    if isinstance(spec, dict):
        strategy: Any = spec.get("updateStrategy")
        if _dict(e, "spec.updateStrategy", strategy):
            _enum(
                e, "spec.updateStrategy.type", strategy.get("type"), ("RollingUpdate", "OnDelete")
            )


def _job_spec(e: Errors, path: str, spec: Any, old_spec: Any = None, manual: bool = True) -> None:
    if not _dict(e, path, spec, required=True):
        return
    _int(e, f"{path}.parallelism", spec.get("parallelism"), 0)
    _int(e, f"{path}.completions", spec.get("completions"), 0)
    _int(e, f"{path}.backoffLimit", spec.get("backoffLimit"), 0)
    _int(e, f"{path}.activeDeadlineSeconds", spec.get("activeDeadlineSeconds"), 1)
    _int(e, f"{path}.ttlSecondsAfterFinished", spec.get("ttlSecondsAfterFinished"), 0)
    _enum(e, f"{path}.completionMode", spec.get("completionMode"), ("NonIndexed", "Indexed"))
    if spec.get("completionMode") == "Indexed" and spec.get("completions") is None:
        e.add(f"{path}.completions", "required when completionMode is Indexed")
    selector: Any = spec.get("selector")
    if manual or selector is not None:
        _selector(e, f"{path}.selector", selector, required=manual)
    podspec.validate_template(e, f"{path}.template", spec.get("template"), selector if manual else None,
              ("OnFailure", "Never"))  # fmt: skip
    template: Any = spec.get("template")
    if (
        isinstance(template, dict)
        and isinstance(template.get("spec"), dict)
        and template["spec"].get("restartPolicy") is None
    ):
        e.add(f"{path}.template.spec.restartPolicy", "required: OnFailure or Never")
    if isinstance(old_spec, dict):
        if old_spec.get("template") != spec.get("template"):
            e.add(f"{path}.template", "field is immutable")
        if old_spec.get("completions") != spec.get("completions"):
            e.add(f"{path}.completions", "field is immutable")


def _job(e: Errors, obj: Object, old: Object | None) -> None:
    spec: Any = obj.get("spec")
    _job_spec(
        e, "spec", spec, (old or {}).get("spec"), manual=bool((spec or {}).get("manualSelector"))
    )


def _cronjob(e: Errors, obj: Object, old: Object | None) -> None:
    spec: Any = obj.get("spec")
    if not _dict(e, "spec", spec, required=True):
        return
    schedule: Any = spec.get("schedule")
    if not isinstance(schedule, str) or not schedule.strip():
        e.add("spec.schedule", "required")
    elif not schedule.startswith("@"):
        fields = schedule.split()
        if (fields and fields[0].startswith("TZ=")) or (
            fields and fields[0].startswith("CRON_TZ=")
        ):
            fields = fields[1:]
        if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
            e.add("spec.schedule", f"{schedule!r} is not a standard 5-field cron schedule")
    elif schedule not in ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight",
                          "@hourly") and not schedule.startswith("@every "):  # fmt: skip
        e.add("spec.schedule", f"unknown schedule macro {schedule!r}")
    _enum(
        e, "spec.concurrencyPolicy", spec.get("concurrencyPolicy"), ("Allow", "Forbid", "Replace")
    )
    _int(e, "spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds"), 0)
    _int(e, "spec.successfulJobsHistoryLimit", spec.get("successfulJobsHistoryLimit"), 0)
    _int(e, "spec.failedJobsHistoryLimit", spec.get("failedJobsHistoryLimit"), 0)
    jt: Any = spec.get("jobTemplate")
    if _dict(e, "spec.jobTemplate", jt, required=True):
        _job_spec(e, "spec.jobTemplate.spec", jt.get("spec"), manual=False)


def _podgroup(e: Errors, obj: Object, old: Object | None) -> None:
    volcano.validate_podgroup(e, obj, old, parse_quantity)


def _queue(e: Errors, obj: Object, old: Object | None) -> None:
    volcano.validate_queue(e, obj, old, parse_quantity)


def _vcjob(e: Errors, obj: Object, old: Object | None) -> None:
    def pod_spec(e: volcano.Errors, path: str, spec: Any) -> None:
        assert isinstance(e, Errors)
        podspec.validate(e, path, spec, ("Always", "OnFailure", "Never"))

    volcano.validate_job(e, obj, old, pod_spec, is_dns_label, parse_quantity)


def _command(e: Errors, obj: Object, old: Object | None) -> None:
    volcano.validate_command(e, obj, old)


def _crd(e: Errors, obj: Object, old: Object | None) -> None:
    e.items.extend(crd_validation.validate_crd(obj, old))


# -- storage: PersistentVolume, PersistentVolumeClaim, StorageClass ---------------


def _storageclass(e: Errors, obj: Object, old: Object | None) -> None:
    provisioner: Any = obj.get("provisioner")
    if not isinstance(provisioner, str) or not provisioner:
        e.add("provisioner", "required")
    elif not is_qualified_name(provisioner) and provisioner != "kubernetes.io/no-provisioner":
        e.add("provisioner", f"{provisioner!r} must be a qualified name")
    _enum(e, "reclaimPolicy", obj.get("reclaimPolicy"), ("Retain", "Delete"))
    _enum(e, "volumeBindingMode", obj.get("volumeBindingMode"),
          ("Immediate", "WaitForFirstConsumer"))  # fmt: skip
    params: Any = obj.get("parameters")
    if _dict(e, "parameters", params):
        for key, value in params.items():
            if not isinstance(value, str):
                e.add(f"parameters.{key}", "must be a string")
    if "allowVolumeExpansion" in obj and not isinstance(obj["allowVolumeExpansion"], bool):
        e.add("allowVolumeExpansion", "must be a boolean")
    if old is not None:
        for field in ("provisioner", "parameters", "reclaimPolicy", "volumeBindingMode"):
            if old.get(field) != obj.get(field):
                e.add(field, "field is immutable")


def _with_claim_volumes(e: Errors, obj: Object) -> Object:
    """A StatefulSet whose template also has a volume per volumeClaimTemplate, so
    the template's volumeMounts may name the templates (as on Kubernetes)."""
    spec: Any = obj.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("volumeClaimTemplates"), list):
        return obj
    template: Any = spec.get("template")
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        return obj
    names = [
        ((t.get("metadata") or {}).get("name") if isinstance(t, dict) else None)
        for t in spec["volumeClaimTemplates"]
    ]
    pod_spec = dict(template["spec"])
    existing = {v.get("name") for v in pod_spec.get("volumes") or [] if isinstance(v, dict)}
    extra = [
        {"name": n, "persistentVolumeClaim": {"claimName": n}}
        for n in names
        if isinstance(n, str) and n and n not in existing
    ]
    pod_spec["volumes"] = [*(pod_spec.get("volumes") or []), *extra]
    return {**obj, "spec": {**spec, "template": {**template, "spec": pod_spec}}}


def _statefulset_claims(e: Errors, spec: Object) -> None:
    templates: Any = spec.get("volumeClaimTemplates")
    if _list(e, "spec.volumeClaimTemplates", templates):
        seen: set[str] = set()
        for i, t in enumerate(templates):
            path = f"spec.volumeClaimTemplates[{i}]"
            if not _dict(e, path, t, required=True):
                continue
            name: Any = (t.get("metadata") or {}).get("name")
            if not isinstance(name, str) or not is_dns_label(name):
                e.add(f"{path}.metadata.name", f"{name!r} must be a DNS-1123 label")
            elif name in seen:
                e.add(f"{path}.metadata.name", f"duplicate claim template {name!r}")
            else:
                seen.add(name)
            _claim_spec(e, f"{path}.spec", t.get("spec"))
    policy: Any = spec.get("persistentVolumeClaimRetentionPolicy")
    if _dict(e, "spec.persistentVolumeClaimRetentionPolicy", policy):
        for field in ("whenDeleted", "whenScaled"):
            _enum(e, f"spec.persistentVolumeClaimRetentionPolicy.{field}", policy.get(field),
                  ("Retain", "Delete"))  # fmt: skip


def _rbac(e: Errors, obj: Object, old: Object | None) -> None:
    e.items.extend(rbac.problems(str(obj.get("kind") or ""), obj, old))


VALIDATORS: dict[str, Callable[[Errors, Object, Object | None], None]] = {
    "CustomResourceDefinition": _crd,
    "ReplicaSet": _replicaset,
    "Deployment": _deployment,
    "StatefulSet": _statefulset,
    "DaemonSet": _daemonset,
    "Job": _job,
    "CronJob": _cronjob,
    "PodGroup": _podgroup,
    "StorageClass": _storageclass,
    "Role": _rbac,
    "ClusterRole": _rbac,
    "RoleBinding": _rbac,
    "ClusterRoleBinding": _rbac,
    "Queue": _queue,
    volcano.JOB_KEY: _vcjob,
    "Command": _command,
}


def validate(kind: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[str]:
    """Every problem with obj as `path: problem`; [] when valid."""
    definition = kinds.definition(kind)
    info = definition.info
    e = Errors()
    if not isinstance(obj, dict):
        return ["object: must be a JSON object"]
    api_version: Any = obj.get("apiVersion")
    if api_version is not None and not info.accepts_api_version(str(api_version)):
        e.add(
            "apiVersion",
            f"{api_version!r} does not serve kind {info.kind} (use {info.api_version})",
        )
    meta.validate(e, info, obj, definition.name_rule)
    validator = definition.validate or VALIDATORS.get(info.key)
    if validator is not None:
        validator(e, obj, dict(old) if old is not None else None)
    elif crd.is_custom(info.key):
        e.items.extend(crd.validate_object(info.key, obj))
    return e.items


def validate_metadata(e: Errors, info: KindInfo, obj: Object) -> None:
    """metadata's rules alone, with the kind's name rule (pods/binding)."""
    meta.validate(e, info, obj, kinds.definition(info.key).name_rule)
