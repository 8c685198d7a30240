"""Validation of objects, with Kubernetes' rules for the fields skiff supports.

`validate(kind, obj, old)` returns a list of messages, each naming the field
path and the problem (`spec.replicas: must be >= 0`); an empty list means
valid. `old` is the stored object on update, for immutability rules. Every
kind's object has its apiVersion and metadata checked (kinds/shared/meta.py,
with the kind's metadata.name rule); the rest is the kind's own
(`KindDef.validate` in controlplane/api/kinds/<group>/<kind>.py; a custom
kind's checks its CRD's schema). Unknown fields are not errors: they are
kept as the manifest has them (pruning drops what a schema does not know).
Pure functions: no storage access, never mutates the object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.api import kinds
from controlplane.api.checks import Errors
from controlplane.api.kinds import KindInfo
from controlplane.api.kinds.shared import meta

Object = dict[str, Any]


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
    if definition.validate is not None:
        definition.validate(e, obj, dict(old) if old is not None else None)
    return e.items


def validate_metadata(e: Errors, info: KindInfo, obj: Object) -> None:
    """metadata's rules alone, with the kind's name rule (pods/binding)."""
    meta.validate(e, info, obj, kinds.definition(info.key).name_rule)
