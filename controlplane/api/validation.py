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
from controlplane.api.checks import mapping as _dict
from controlplane.api.dnsnames import is_dns_label
from controlplane.api.kinds import KindInfo
from controlplane.api.kinds.shared import meta, podspec
from controlplane.api.quantity import parse_quantity

Object = dict[str, Any]

_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_CRON_FIELD = re.compile(r"^[\d*/,\-A-Za-z?LW#]+$")


# -- pods ------------------------------------------------------------------------


# -- kinds -----------------------------------------------------------------------


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


def _rbac(e: Errors, obj: Object, old: Object | None) -> None:
    e.items.extend(rbac.problems(str(obj.get("kind") or ""), obj, old))


VALIDATORS: dict[str, Callable[[Errors, Object, Object | None], None]] = {
    "CustomResourceDefinition": _crd,
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
