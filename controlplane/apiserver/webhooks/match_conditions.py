"""A webhook's `matchConditions`: CEL expressions over the request that
must all be true for the webhook to be called (Kubernetes'
admission/plugin/webhook/matchconditions).

The CEL engine is another part's ("cel" branch): this module calls it
through one narrow function, `controlplane.api.cel.match_conditions.
evaluate(conditions, variables) -> bool` (variables: `object`, `oldObject`,
`request`), raising on an expression that fails. Until that engine is
present, `available()` is False: the configuration kinds refuse webhooks
with matchConditions when written (admissionregistration/webhooks.py), and
`evaluate` raises `NoEngine` for any that were stored before.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

Object = dict[str, Any]
ENGINE = "controlplane.api.cel.match_conditions"


class ConditionError(Exception):
    """A condition could not be evaluated (the text says which and why)."""


class NoEngine(ConditionError):
    pass


def available() -> bool:
    try:
        return importlib.util.find_spec(ENGINE) is not None
    except ModuleNotFoundError:
        return False


def _engine() -> Callable[[list[Object], Object], bool] | None:
    if not available():
        return None
    module = importlib.import_module(ENGINE)
    evaluate: Callable[[list[Object], Object], bool] = module.evaluate
    return evaluate


def evaluate(conditions: list[Object], variables: Object) -> bool:
    """Whether every condition holds (no conditions: True)."""
    if not conditions:
        return True
    engine = _engine()
    if engine is None:
        raise NoEngine("matchConditions: no CEL engine is available in this API server")
    try:
        return bool(engine(conditions, variables))
    except ConditionError:
        raise
    except Exception as err:  # the engine's own errors (compile, type, cost)
        raise ConditionError(f"matchConditions: {err}") from err
