"""ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, cluster-scoped):
CEL validations a binding applies to the requests it matches (enforced by
controlplane/apiserver/policy/); every expression compiled when written
(policies.py); status.typeChecking written by the policy controller."""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors
from controlplane.api.display import age, name
from controlplane.api.kinds.admissionregistration import policies
from controlplane.api.kinds.admissionregistration.policy_types import MATCH_TYPES, POLICY_TYPES
from controlplane.api.kinds.definition import KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo

Object = dict[str, Any]


def defaults(obj: Object) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("failurePolicy", "Fail")
    policies.default_match_resources(spec.get("matchConstraints"))


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    policies.validate_policy_spec(e, obj.get("spec"))


def row(obj: Object, now: float, wide: bool) -> list[str]:
    spec = obj.get("spec") or {}
    kind = spec.get("paramKind") or {}
    param = f"{kind.get('apiVersion')}/{kind.get('kind')}" if kind else "<unset>"
    return [name(obj), str(len(spec.get("validations") or [])), param, age(obj, now)]


DEFINITION = KindDef(
    KindInfo(
        "ValidatingAdmissionPolicy",
        "admissionregistration.k8s.io/v1",
        namespaced=False,
        has_status=True,
        categories=("api-extensions",),
    ),
    types={**POLICY_TYPES, **MATCH_TYPES},
    defaults=defaults,
    validate=validate,
    printer=Printer(columns(("NAME", "VALIDATIONS", "PARAMKIND", "AGE")), row),
)
