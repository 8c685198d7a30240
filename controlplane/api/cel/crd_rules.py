"""CRD validation rules in CEL: `x-kubernetes-validations` (Kubernetes'
apiextensions-apiserver/pkg/apiserver/schema/cel).

- `schema_errors(schema, path)`: the write-time checks of a CRD's
  openAPIV3Schema: every rule and messageExpression compiles (the error
  has the position), reason and fieldPath are valid, `oldSelf` only where
  an old value can be correlated, each rule's estimated cost within
  Kubernetes' per-expression limit and all of them within the per-CRD
  limit.
- `validate(schema, obj, old)`: the rules on a create, update or status
  update, as `path: Invalid value: "object": message` (or Forbidden,
  Required, Duplicate by `reason`). A transition rule (one that reads
  `oldSelf`) runs only on an update where the old value exists (unless
  optionalOldSelf); a value unchanged by the update is not re-judged by
  its rules (validation ratcheting, Kubernetes 1.33's default).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

from controlplane.api.cel import cost, escaping, schema_check
from controlplane.api.cel.engine import CompileError, EvalError, Program
from controlplane.api.cel.programs import program

Object = dict[str, Any]
RULES = "x-kubernetes-validations"
REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")
_FIELD_PATH = re.compile(r"^(\.[A-Za-z_][A-Za-z0-9_-]*|\[\d+\]|\['[^']*'\])+$")
_OLD = re.compile(r"\boldSelf\b")


def _variables(rule: Object) -> tuple[str, ...]:
    return ("self", "oldSelf")


def _go_rule(rule: Object) -> str:
    """The rule as kube-apiserver prints it in a write-time error."""
    reason = rule.get("reason")
    optional = rule.get("optionalOldSelf")
    return (
        f"apiextensions.ValidationRule{{Rule:{json.dumps(str(rule.get('rule', '')))}, "
        f"Message:{json.dumps(str(rule.get('message', '')))}, "
        f"MessageExpression:{json.dumps(str(rule.get('messageExpression', '')))}, "
        f"Reason:{'(*apiextensions.FieldValueErrorReason)(nil)' if reason is None else f'&{reason}'}, "
        f"FieldPath:{json.dumps(str(rule.get('fieldPath', '')))}, "
        f"OptionalOldSelf:{'(*bool)(nil)' if optional is None else f'&{optional}'.lower()}}}"
    )


def _nodes(
    s: Any, path: str, correlatable: bool, card: int
) -> Iterator[tuple[Object, str, bool, int]]:
    """Each schema node with its path (Kubernetes' `properties[name]` form),
    whether an old value can be correlated there, and how many times at most
    its rules run per object."""
    if not isinstance(s, dict):
        return
    yield s, path, correlatable, card
    for key, sub in (s.get("properties") or {}).items():
        yield from _nodes(sub, f"{path}.properties[{key}]", correlatable, card)
    items = s.get("items")
    if isinstance(items, dict):
        keyed = s.get("x-kubernetes-list-type") == "map"
        yield from _nodes(items, f"{path}.items", correlatable and keyed, card * cost.max_size(s))
    extra = s.get("additionalProperties")
    if isinstance(extra, dict):
        yield from _nodes(
            extra, f"{path}.additionalProperties", correlatable, card * cost.max_size(s)
        )


def schema_errors(schema: Any, path: str) -> list[str]:
    errors: list[str] = []
    total = 0
    for node, at, correlatable, card in _nodes(schema, path, True, 1):
        rules = node.get(RULES)
        if rules is None:
            continue
        if not isinstance(rules, list):
            errors.append(f"{at}.{RULES}: Invalid value: must be a list of rules")
            continue
        for i, rule in enumerate(rules):
            where = f"{at}.{RULES}[{i}]"
            if not isinstance(rule, dict):
                errors.append(f"{where}: Invalid value: must be an object")
                continue
            rule_cost = _rule_errors(errors, rule, where, node, correlatable, at == path)
            total += rule_cost * card
    if total > cost.STATIC_ESTIMATED_CRD_COST_LIMIT:
        errors.append(
            f"{path}: Forbidden: x-kubernetes-validations estimated rule cost total for entire "
            f"OpenAPIv3 schema exceeds budget by factor of "
            f"{cost.exceeds(total, cost.STATIC_ESTIMATED_CRD_COST_LIMIT)} {cost.ADVICE}"
        )
    return errors


def _rule_errors(
    errors: list[str], rule: Object, where: str, node: Object, correlatable: bool, root: bool
) -> int:
    text = rule.get("rule")
    if not isinstance(text, str) or not text.strip():
        errors.append(f"{where}.rule: Required value")
        return 0
    reason = rule.get("reason")
    if reason is not None and reason not in REASONS:
        supported = ", ".join(f'"{r}"' for r in REASONS)
        errors.append(
            f'{where}.reason: Unsupported value: "{reason}": supported values: {supported}'
        )
    field_path = rule.get("fieldPath")
    if field_path and (not isinstance(field_path, str) or not _FIELD_PATH.match(field_path)):
        errors.append(f"{where}.fieldPath: Invalid value: {json.dumps(field_path)}: "
                      "fieldPath must be a valid path")  # fmt: skip
    msg = rule.get("message")
    if isinstance(msg, str) and (msg.strip() != msg or "\n" in msg) and msg:
        errors.append(f"{where}.message: Invalid value: {json.dumps(msg)}: "
                      "message must not contain line breaks or leading/trailing whitespace")  # fmt: skip
    try:
        prog = program(text, _variables(rule))
    except CompileError as err:
        errors.append(f"{where}.rule: Invalid value: {_go_rule(rule)}: {err}")
        return 0
    missing = schema_check.undefined(prog.ast(), text, node, root)
    if missing is not None:
        errors.append(
            f"{where}.rule: Invalid value: {_go_rule(rule)}: compilation failed: {missing}"
        )
        return 0
    if _OLD.search(text) and not correlatable:
        errors.append(f"{where}.rule: Invalid value: {_go_rule(rule)}: oldSelf cannot be used "
                      "on the uncorrelatable portion of the schema within " + where)  # fmt: skip
    expression = rule.get("messageExpression")
    if expression:
        try:
            program(str(expression), _variables(rule))
        except CompileError as err:
            errors.append(f"{where}.messageExpression: Invalid value: {_go_rule(rule)}: "
                          f"messageExpression {err}")  # fmt: skip
    estimated = cost.estimate(prog.ast(), {"self": node, "oldSelf": node})
    if estimated > cost.STATIC_ESTIMATED_COST_LIMIT:
        factor = cost.exceeds(estimated, cost.STATIC_ESTIMATED_COST_LIMIT)
        errors.append(f"{where}.rule: Forbidden: estimated rule cost exceeds budget by factor "
                      f"of {factor} {cost.ADVICE}")  # fmt: skip
    return estimated


# ---- evaluation ------------------------------------------------------------------

_MISSING = object()
# optionalOldSelf: the rule run with oldSelf bound to an optional of the old value
_OPTIONAL_OLD = "cel.bind(oldSelf, hasOld__ ? optional.of(old__) : optional.none(), {rule})"
_OPTIONAL_VARS = ("hasOld__", "old__", "self")


# The runtime bound of one object's rules together (Kubernetes' runtime cost
# budget, here in time: cel-cpp keeps no cost units): past it no further rule
# runs, and the write is refused with kube-apiserver's message.
RUNTIME_BUDGET_SECONDS = 1.0
OUT_OF_BUDGET = (
    "validation failed due to running out of cost budget, no further validation rules will be run"
)
_state = threading.local()


def validate(schema: Any, obj: Object, old: Object | None) -> list[str]:
    """Every failed rule of `obj` (old: the stored object on update)."""
    errors: list[str] = []
    root_old: Any = _root_view(old) if old is not None else _MISSING
    _state.deadline = time.monotonic() + RUNTIME_BUDGET_SECONDS
    _state.exhausted = False
    _walk(schema, _root_view(obj), root_old, "", errors)
    return errors


def _over_budget(s: Object, path: str, errors: list[str]) -> bool:
    if _state.exhausted:
        return True
    if time.monotonic() <= _state.deadline:
        return False
    _state.exhausted = True
    kind = json.dumps(str(s.get("type") or "object"))
    errors.append(f"{path or '<nil>'}: Invalid value: {kind}: {OUT_OF_BUDGET}")
    return True


def _root_view(obj: Object) -> Object:
    """At the root, metadata shows only name and generateName (Kubernetes)."""
    view = dict(obj)
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        view["metadata"] = {k: meta[k] for k in ("name", "generateName") if k in meta}
    return view


def _walk(s: Any, value: Any, old: Any, path: str, errors: list[str]) -> None:
    if not isinstance(s, dict) or value is None:
        return
    rules = s.get(RULES)
    unchanged = old is not _MISSING and old == value
    for rule in rules if isinstance(rules, list) else []:
        # ratcheting: an unchanged value is judged only by transition rules
        if isinstance(rule, dict) and not (unchanged and not _OLD.search(str(rule.get("rule")))):
            if _over_budget(s, path, errors):
                return
            _check(rule, s, value, old, path, errors)
    props = s.get("properties") or {}
    if isinstance(value, dict):
        old_map = old if isinstance(old, dict) else {}
        extra = s.get("additionalProperties")
        for key, sub in value.items():
            child = props.get(key) or (extra if isinstance(extra, dict) else None)
            if child is not None:
                at = f"{path}.{key}" if path and key in props else (
                    f"{path}[{key}]" if path else key)  # fmt: skip
                _walk(child, sub, old_map.get(key, _MISSING), at, errors)
    elif isinstance(value, list) and isinstance(s.get("items"), dict):
        olds = _correlate(s, value, old)
        for i, item in enumerate(value):
            _walk(s["items"], item, olds[i], f"{path}[{i}]", errors)


def _correlate(s: Object, value: list[Any], old: Any) -> list[Any]:
    """Old items by list-map keys (other lists' items are not correlatable)."""
    keys = s.get("x-kubernetes-list-map-keys") or []
    if s.get("x-kubernetes-list-type") != "map" or not keys or not isinstance(old, list):
        return [_MISSING] * len(value)

    def key(item: Any) -> tuple[Any, ...] | None:
        return tuple(item.get(k) for k in keys) if isinstance(item, dict) else None

    by_key = {key(item): item for item in old}
    return [by_key.get(key(item), _MISSING) for item in value]


def _check(rule: Object, s: Object, value: Any, old: Any, path: str, errors: list[str]) -> None:
    text = str(rule.get("rule") or "")
    transition = bool(_OLD.search(text))
    optional = rule.get("optionalOldSelf") is True
    if transition and old is _MISSING and not optional:
        return
    try:
        prog = program(text, _variables(rule))
    except CompileError as err:  # stored before this server checked rules
        errors.append(_error(rule, s, path, f"rule compile error: {err}"))
        return
    value = escaping.escaped(value, s)
    if old is not _MISSING:
        old = escaping.escaped(old, s)
    activation = {"self": value, "oldSelf": None if old is _MISSING else old}
    if optional and transition:  # oldSelf is an optional: hasValue(), orValue(), value()
        prog = program(_OPTIONAL_OLD.format(rule=text), _OPTIONAL_VARS)
        activation = {
            "self": value,
            "old__": activation["oldSelf"],
            "hasOld__": old is not _MISSING,
        }
    try:
        result = prog.evaluate(activation)
    except EvalError as err:
        errors.append(_error(rule, s, path, f"{err} evaluating rule: {text}"))
        return
    if result is True:
        return
    if not isinstance(result, bool):
        errors.append(_error(rule, s, path, f"rule did not evaluate to bool: {text}"))
        return
    errors.append(_error(rule, s, path, _message(rule, activation, text), use_reason=True,
                         field_path=str(rule.get("fieldPath") or "")))  # fmt: skip


def _message(rule: Object, activation: Object, text: str) -> str:
    expression = rule.get("messageExpression")
    if expression:
        try:
            result = program(str(expression), _variables(rule)).evaluate(activation)
        except (CompileError, EvalError):
            result = None
        if isinstance(result, str) and result.strip() and "\n" not in result:
            return result
    message = rule.get("message")
    return str(message) if message else f"failed rule: {text}"


def _error(rule: Object, s: Object, path: str, message: str, use_reason: bool = False,
           field_path: str = "") -> str:  # fmt: skip
    if field_path:
        suffix = field_path[1:] if field_path.startswith(".") else field_path
        path = f"{path}.{suffix}" if path and not suffix.startswith("[") else f"{path}{suffix}"
    where = path or "<nil>"
    kind = json.dumps(str(s.get("type") or "object"))
    reason = rule.get("reason") if use_reason else None
    if reason == "FieldValueForbidden":
        return f"{where}: Forbidden: {message}"
    if reason == "FieldValueRequired":
        return f"{where}: Required value: {message}"
    if reason == "FieldValueDuplicate":
        return f"{where}: Duplicate value: {kind}"
    return f"{where}: Invalid value: {kind}: {message}"


def compiled(text: str) -> Program:
    """A rule's program (for callers that pre-compile at registration)."""
    return program(text, ("self", "oldSelf"))
