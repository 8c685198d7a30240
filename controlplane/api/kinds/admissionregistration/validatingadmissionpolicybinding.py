"""ValidatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1,
cluster-scoped): which requests a ValidatingAdmissionPolicy judges, with
which parameters, and what a failure does (Deny, Warn, Audit)."""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors
from controlplane.api.display import age, name
from controlplane.api.kinds.admissionregistration import policies
from controlplane.api.kinds.admissionregistration.policy_types import BINDING_TYPES, MATCH_TYPES
from controlplane.api.kinds.definition import KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo

Object = dict[str, Any]


def defaults(obj: Object) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        policies.default_match_resources(spec.get("matchResources"))


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    policies.validate_binding_spec(e, obj.get("spec"))


def row(obj: Object, now: float, wide: bool) -> list[str]:
    spec = obj.get("spec") or {}
    ref = spec.get("paramRef") or {}
    param = "<unset>"
    if ref:
        param = f"{ref.get('namespace')}/{ref.get('name') or '*'}" if ref.get("namespace") else (
            f"*/{ref.get('name') or '*'}")  # fmt: skip
    return [name(obj), str(spec.get("policyName") or ""), param, age(obj, now)]


DEFINITION = KindDef(
    KindInfo(
        "ValidatingAdmissionPolicyBinding",
        "admissionregistration.k8s.io/v1",
        namespaced=False,
        has_status=False,
        categories=("api-extensions",),
    ),
    types={**BINDING_TYPES, **MATCH_TYPES},
    defaults=defaults,
    validate=validate,
    printer=Printer(columns(("NAME", "POLICYNAME", "PARAMREF", "AGE")), row),
)
