"""What ValidatingAdmissionPolicy and its Binding share: defaults and
validation of matchResources (Kubernetes' admissionregistration/v1
validation), and the CEL checks of a policy's expressions, which are
compiled when the policy is written so a broken one is refused with the
position of the error (the engine loaded then: a server with no policy
never loads it).
"""

from __future__ import annotations

import re
from typing import Any

from controlplane.api.cel.variables import VARIABLES
from controlplane.api.checks import Errors, each_object, enum, items, mapping, selector

Object = dict[str, Any]
OPERATIONS = ("*", "CREATE", "UPDATE", "DELETE", "CONNECT")
REASONS = ("Unauthorized", "Forbidden", "Invalid", "RequestEntityTooLarge")
ACTIONS = ("Deny", "Warn", "Audit")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def default_match_resources(match: Any) -> None:
    if not isinstance(match, dict):
        return
    match.setdefault("namespaceSelector", {})
    match.setdefault("objectSelector", {})
    match.setdefault("matchPolicy", "Equivalent")
    for key in ("resourceRules", "excludeResourceRules"):
        for rule in match.get(key) or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")


def _rules(e: Errors, path: str, rules: Any) -> None:
    if not items(e, path, rules):
        return
    for rp, rule in each_object(e, path, rules):
        for key in ("operations", "apiGroups", "apiVersions", "resources"):
            items(e, f"{rp}.{key}", rule.get(key), required=True)
        for j, op in enumerate(rule.get("operations") or []):
            enum(e, f"{rp}.operations[{j}]", op, OPERATIONS)
        enum(e, f"{rp}.scope", rule.get("scope"), ("*", "Cluster", "Namespaced"))
        names = rule.get("resourceNames")
        if names is not None:
            items(e, f"{rp}.resourceNames", names)


def validate_match_resources(e: Errors, path: str, match: Any, required: bool) -> None:
    if match is None:
        if required:
            e.required(path)
        return
    if not mapping(e, path, match):
        return
    if required and not match.get("resourceRules"):
        e.required(f"{path}.resourceRules")
    _rules(e, f"{path}.resourceRules", match.get("resourceRules"))
    _rules(e, f"{path}.excludeResourceRules", match.get("excludeResourceRules"))
    enum(e, f"{path}.matchPolicy", match.get("matchPolicy"), ("Exact", "Equivalent"))
    for key in ("namespaceSelector", "objectSelector"):
        if match.get(key) is not None:
            selector(e, f"{path}.{key}", match[key], required=False)


def compile_expression(e: Errors, path: str, expression: Any, what: str = "") -> None:
    """A CEL expression that must compile (what: "messageExpression " etc.)."""
    if not isinstance(expression, str) or not expression.strip():
        e.required(path)
        return
    from controlplane.api.cel.engine import CompileError
    from controlplane.api.cel.programs import program

    try:
        program(expression, VARIABLES)
    except CompileError as err:
        e.invalid(path, expression, f"{what}{err}")


def validate_policy_spec(e: Errors, spec: Any) -> None:
    if not mapping(e, "spec", spec, required=True):
        return
    enum(e, "spec.failurePolicy", spec.get("failurePolicy"), ("Ignore", "Fail"))
    validate_match_resources(e, "spec.matchConstraints", spec.get("matchConstraints"), True)
    param_kind = spec.get("paramKind")
    if param_kind is not None and mapping(e, "spec.paramKind", param_kind):
        for key in ("apiVersion", "kind"):
            if not param_kind.get(key):
                e.required(f"spec.paramKind.{key}")
    validations, annotations = spec.get("validations"), spec.get("auditAnnotations")
    if not validations and not annotations:
        e.required("spec.validations",
                   "validations or auditAnnotations must contain at least one item")  # fmt: skip
    _variables(e, spec.get("variables"))
    if items(e, "spec.validations", validations):
        for vp, v in each_object(e, "spec.validations", validations):
            compile_expression(e, f"{vp}.expression", v.get("expression"))
            if v.get("messageExpression"):
                compile_expression(e, f"{vp}.messageExpression", v["messageExpression"],
                                   "messageExpression ")  # fmt: skip
            message = v.get("message")
            if isinstance(message, str) and "\n" in message:
                e.invalid(f"{vp}.message", message, "message must not contain line breaks")
            if v.get("reason") is not None:
                enum(e, f"{vp}.reason", v.get("reason"), REASONS)
    if items(e, "spec.auditAnnotations", annotations):
        for ap, a in each_object(e, "spec.auditAnnotations", annotations):
            if not a.get("key"):
                e.required(f"{ap}.key")
            compile_expression(e, f"{ap}.valueExpression", a.get("valueExpression"))
    from controlplane.api.cel import match_conditions

    e.items.extend(match_conditions.compile_errors(spec.get("matchConditions"),
                                                   "spec.matchConditions"))  # fmt: skip


def _variables(e: Errors, variables: Any) -> None:
    if not items(e, "spec.variables", variables):
        return
    seen: set[str] = set()
    for vp, v in each_object(e, "spec.variables", variables):
        name = v.get("name")
        if not name:
            e.required(f"{vp}.name")
        elif not _IDENT.match(str(name)):
            e.invalid(f"{vp}.name", name, "name is not a valid CEL identifier")
        elif name in seen:
            e.duplicate(f"{vp}.name", name)
        else:
            seen.add(str(name))
        compile_expression(e, f"{vp}.expression", v.get("expression"))


def validate_binding_spec(e: Errors, spec: Any) -> None:
    if not mapping(e, "spec", spec, required=True):
        return
    if not spec.get("policyName"):
        e.required("spec.policyName")
    actions = spec.get("validationActions")
    if not actions:
        e.required("spec.validationActions")
    elif items(e, "spec.validationActions", actions):
        seen: set[str] = set()
        for i, action in enumerate(actions):
            if action in seen:
                e.duplicate(f"spec.validationActions[{i}]", action)
            seen.add(str(action))
            enum(e, f"spec.validationActions[{i}]", action, ACTIONS)
        if {"Deny", "Warn"} <= seen:
            e.invalid("spec.validationActions", actions,
                      "must not contain both Deny and Warn (repeating the same validation "
                      "failure information in the API response and headers serves no "
                      "purpose)")  # fmt: skip
    ref = spec.get("paramRef")
    if ref is not None and mapping(e, "spec.paramRef", ref):
        if ref.get("name") and ref.get("selector") is not None:
            e.forbidden("spec.paramRef.name", "name and selector are mutually exclusive")
        if not ref.get("name") and ref.get("selector") is None:
            e.required("spec.paramRef", "one of name or selector must be specified")
        if ref.get("selector") is not None:
            selector(e, "spec.paramRef.selector", ref["selector"], required=False)
        action = ref.get("parameterNotFoundAction")
        if action is None:
            e.required("spec.paramRef.parameterNotFoundAction")
        else:
            enum(e, "spec.paramRef.parameterNotFoundAction", action, ("Allow", "Deny"))
    validate_match_resources(e, "spec.matchResources", spec.get("matchResources"), False)
