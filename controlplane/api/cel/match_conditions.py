"""The CEL matchConditions evaluator (Kubernetes'
admission/plugin/cel/matchconditions), called by the admission webhooks
and by ValidatingAdmissionPolicy.

`evaluate(conditions, variables) -> bool`: every condition {name,
expression} over `object`, `oldObject`, `request` (and `params` for a
policy). Kubernetes' order: a condition that is false means no match,
whatever the others do; otherwise the first error is raised (the caller's
failurePolicy decides). `compile_errors(conditions, path)` is the
write-time check: Kubernetes' field errors for a configuration or policy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from controlplane.api.cel.engine import CompileError, EvalError
from controlplane.api.cel.programs import program
from controlplane.api.cel.variables import VARIABLES

__all__ = ["VARIABLES", "ConditionError", "compile_errors", "evaluate"]


class ConditionError(RuntimeError):
    """A condition failed to compile or evaluate (the text names it)."""


def evaluate(conditions: Sequence[Mapping[str, Any]], variables: Mapping[str, Any]) -> bool:
    error: ConditionError | None = None
    for condition in conditions:
        name = str(condition.get("name") or "")
        expression = str(condition.get("expression") or "")
        try:
            result = program(expression, VARIABLES).evaluate(variables)
        except (CompileError, EvalError) as err:
            error = error or ConditionError(f"failed to evaluate matchCondition {name!r}: {err}")
            continue
        if not isinstance(result, bool):
            error = error or ConditionError(
                f"matchCondition {name!r}: expression must evaluate to bool, got {type(result).__name__}"
            )
            continue
        if not result:
            return False
    if error is not None:
        raise error
    return True


def compile_errors(conditions: object, path: str) -> list[str]:
    """Kubernetes' validation of a matchConditions list at `path`."""
    if conditions is None:
        return []
    if not isinstance(conditions, list):
        return [f"{path}: Invalid value: must be a list"]
    errors: list[str] = []
    seen: set[str] = set()
    if len(conditions) > 64:
        errors.append(f"{path}: Too many: {len(conditions)}: must have at most 64 items")
    for i, condition in enumerate(conditions):
        at = f"{path}[{i}]"
        if not isinstance(condition, dict):
            errors.append(f"{at}: Invalid value: must be an object")
            continue
        name = condition.get("name")
        if not name:
            errors.append(f"{at}.name: Required value")
        elif name in seen:
            errors.append(f'{at}.name: Duplicate value: "{name}"')
        else:
            seen.add(str(name))
        expression = condition.get("expression")
        if not expression:
            errors.append(f"{at}.expression: Required value")
            continue
        try:
            program(str(expression), VARIABLES)
        except CompileError as err:
            errors.append(f"{at}.expression: Invalid value: {_quote(str(expression))}: {err}")
    return errors


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
