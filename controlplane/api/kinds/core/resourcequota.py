"""ResourceQuota (v1): limits on what a namespace may hold.

As Kubernetes has it: namespaced, short name `quota`, a status subresource
(the quota controller writes status.hard and status.used; the quota
admission, controlplane/apiserver/quota_admission.py, refuses writes past
them). Validation (ValidateResourceQuota): hard's names are resource names,
its values non-negative quantities, whole numbers for object counts; scopes
are known, Terminating/NotTerminating and BestEffort/NotBestEffort exclude
each other, a scoped quota limits only what its scopes can count, and a
scopeSelector's operators have the values they need. Columns, as
Kubernetes' printer: NAME AGE REQUEST LIMIT (`pods: 1/10, requests.cpu:
500m/1`; `limits.*` in LIMIT).
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors, each_object, is_qualified_name, items, mapping
from controlplane.api.display import age, name, spec, status
from controlplane.api.kinds.definition import Column, KindDef, Printer
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import facts
from controlplane.api.quantity import format_quantity, is_binary, parse_quantity
from controlplane.api.quota import POD_RESOURCES, SCOPES
from controlplane.api.schema import CORE, declare, struct

Object = dict[str, Any]

# Resources counted in whole objects (IsIntegerResourceName).
_INTEGER = {"pods", "services", "replicationcontrollers", "resourcequotas", "secrets",
            "configmaps", "persistentvolumeclaims", "services.nodeports",
            "services.loadbalancers"}  # fmt: skip
_STANDARD = _INTEGER | POD_RESOURCES | {"requests.storage"}
_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_SCOPE_OPERATORS = {"PriorityClass": _OPERATORS}  # others: Exists, DoesNotExist


def is_integer_resource(resource: str) -> bool:
    return resource in _INTEGER or resource.startswith("count/")


def _quoted(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def validate_resources(e: Errors, path: str, resources: Any, scoped: bool = False) -> None:
    """A ResourceList of hard or used: names and non-negative quantities."""
    if not mapping(e, path, resources):
        return
    for resource, value in resources.items():
        where = f"{path}[{resource}]"
        text = str(resource)
        if text not in _STANDARD and not (is_qualified_name(text) and "/" in text):
            e.add(where, f'Invalid value: "{text}": must be a standard resource for quota')
            continue
        try:
            amount = parse_quantity(value)
        except ValueError:
            e.add(where, f"Invalid value: {_quoted(value)}: quantities must match the regular "
                         "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")  # fmt: skip
            continue
        if amount < 0:
            e.add(where, f"Invalid value: {_quoted(value)}: must be greater than or equal to 0")
        elif is_integer_resource(text) and amount.denominator != 1:
            e.add(where, f"Invalid value: {_quoted(value)}: must be an integer")


def _validate_scopes(e: Errors, quota_spec: Object) -> list[str]:
    names: list[str] = []
    scopes: Any = quota_spec.get("scopes")
    if items(e, "spec.scopes", scopes):
        for i, scope in enumerate(scopes):
            if scope not in SCOPES:
                e.add(f"spec.scopes[{i}]", f'Unsupported value: {_quoted(scope)}: supported '
                      f'values: {", ".join(chr(34) + s + chr(34) for s in SCOPES)}')  # fmt: skip
            names.append(str(scope))
    selector: Any = quota_spec.get("scopeSelector")
    if mapping(e, "spec.scopeSelector", selector):
        exprs = selector.get("matchExpressions")
        if items(e, "spec.scopeSelector.matchExpressions", exprs):
            for path, expr in each_object(
                e, "spec.scopeSelector.matchExpressions", exprs, required=True
            ):
                scope, op = expr.get("scopeName"), expr.get("operator")
                values = expr.get("values") or []
                if scope not in SCOPES:
                    e.add(f"{path}.scopeName", f"Unsupported value: {_quoted(scope)}: "
                          "unsupported scope")  # fmt: skip
                    continue
                names.append(str(scope))
                if op not in _SCOPE_OPERATORS.get(str(scope), ("Exists", "DoesNotExist")):
                    e.add(f"{path}.operator", f"Invalid value: {_quoted(op)}: not a valid "
                          "selector operator")  # fmt: skip
                elif op in ("In", "NotIn") and not values:
                    e.add(f"{path}.values", "Required value: must be at least one value when "
                          "`operator` is 'In' or 'NotIn' for scope selector")  # fmt: skip
                elif op in ("Exists", "DoesNotExist") and values:
                    e.add(f"{path}.values", "Invalid value: "
                          f"{values!r}: must be no value when `operator` is '{op}'")  # fmt: skip
    return names


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    quota_spec: Any = obj.get("spec")
    if not mapping(e, "spec", quota_spec):
        quota_spec = {}
    scopes = _validate_scopes(e, quota_spec)
    validate_resources(e, "spec.hard", quota_spec.get("hard"))
    for a, b in (("Terminating", "NotTerminating"), ("BestEffort", "NotBestEffort")):
        if a in scopes and b in scopes:
            e.add("spec.scopes", f'Invalid value: ["{a}","{b}"]: conflicting scopes')
    if scopes:
        allowed = {"pods", "count/pods"} if set(scopes) <= {"BestEffort"} else POD_RESOURCES
        for resource in quota_spec.get("hard") or {}:
            if resource not in allowed:
                e.add(f"spec.hard[{resource}]", f'Invalid value: "{resource}": unsupported '
                      "scope applied to resource")  # fmt: skip
    quota_status: Any = obj.get("status")
    if mapping(e, "status", quota_status):
        validate_resources(e, "status.hard", quota_status.get("hard"))
        validate_resources(e, "status.used", quota_status.get("used"))


def _quantity(value: Any) -> str:
    if value is None:
        return "0"
    try:
        return format_quantity(parse_quantity(value), is_binary(value))
    except ValueError:
        return str(value)


def row(obj: Object, now: float, wide: bool) -> list[str]:
    hard, used = status(obj).get("hard") or {}, status(obj).get("used") or {}
    request: list[str] = []
    limit: list[str] = []
    for resource in sorted(spec(obj).get("hard") or {}):
        cell = f"{resource}: {_quantity(used.get(resource))}/{_quantity(hard.get(resource))}"
        (limit if resource.split(".")[0] == "limits" and "." in resource else request).append(cell)
    return [name(obj), age(obj, now), ", ".join(request), ", ".join(limit)]


DEFINITION = KindDef(
    KindInfo("ResourceQuota", "v1", short_names=("quota",)),
    types={
        **declare(
            CORE,
            """
            ResourceQuota [v1 ResourceQuota]: ResourceQuota sets aggregate quota restrictions
                                              enforced per namespace
                spec    ResourceQuotaSpec
                status  object
            ResourceQuotaSpec: ResourceQuotaSpec defines the desired hard limits to enforce for
                               Quota.
                hard           map[quantity]  hard is the set of desired hard limits for each named
                                              resource.
                scopes         []string       A collection of filters that must match each object
                                              tracked by a quota.
                scopeSelector  ScopeSelector  scopeSelector is also a collection of filters like
                                              scopes.
            ScopeSelector: A scope selector represents the AND of the selectors represented by the
                           scoped-resource selector requirements.
                matchExpressions  []ScopedResourceSelectorRequirement  A list of scope selector
                                                                       requirements by scope of the
                                                                       resources.
            """,
        ),
        "ScopedResourceSelectorRequirement": struct(
            CORE,
            "A scoped-resource selector requirement is a selector that contains values, a scope "
            "name, and an operator that relates the scope name and values.",
            ("operator", "scopeName"),
            scopeName=("string", "The name of the scope that the selector applies to."),
            operator=("string", "Represents a scope's relationship to a set of values."),
            values=("[]string", "An array of string values."),
        ),
    },
    validate=validate,
    printer=Printer(
        (
            Column("NAME"),
            Column("AGE"),
            Column(
                "REQUEST",
                description="Request represents a minimum amount of cpu/memory "
                "that a container may consume.",
            ),
            Column(
                "LIMIT",
                description="Limits control the maximum amount of cpu/memory that a "
                "container may use independent of contention on the node.",
            ),
        ),
        row,
    ),
    patch_meta=facts(),
)
