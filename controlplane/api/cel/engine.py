"""Compile and evaluate CEL expressions (cel-cpp via cel-expr-python).

Every variable is declared `dyn`: objects are JSON, so the checker catches
syntax errors, undeclared names and functions, and wrong overloads on
literals; field-level type errors surface at evaluation, as with
Kubernetes' schemaless fields. Environments are cached per variable set.
Evaluation is bounded twice: a static cost estimate checked at compile time
by the caller (cost.py) and cel-cpp's own comprehension iteration budget,
which stops a runaway nested loop in milliseconds.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_encoders, ext_math, ext_optional, ext_strings

from controlplane.api.cel import library

_LOCK = threading.Lock()
_ENVS: dict[tuple[str, ...], Any] = {}
_STATUS = re.compile(r"^[A-Z_]+: ")
_TAIL = re.compile(r" \[[A-Z_]+\]$")


class CompileError(ValueError):
    """The expression does not compile; str() is Kubernetes' wording."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"compilation failed: {detail}")
        self.detail = detail


class EvalError(RuntimeError):
    """The expression failed at run time (no such key, no overload, budget)."""


def _clean(text: str) -> str:
    """cel-cpp's status text without its code prefix and suffix."""
    text = _TAIL.sub("", _STATUS.sub("", text.strip()))
    return text.strip()


def _env(variables: Iterable[str]) -> Any:
    key = tuple(sorted(set(variables)))
    with _LOCK:
        env = _ENVS.get(key)
        if env is None:
            env = cel.NewEnv(
                variables={name: cel.Type.DYN for name in key},
                extensions=[
                    ext_strings.ExtStrings(),
                    ext_optional.ExtOptional(),
                    ext_bindings.ExtBindings(),
                    ext_math.ExtMath(),
                    ext_encoders.ExtEncoders(),
                    library.extension(),
                ],
            )
            _ENVS[key] = env
        return env


class Bound:
    """Values converted to CEL once for several programs compiled with the same
    variables (a policy's validations over one request's object)."""

    def __init__(self, variables: tuple[str, ...], values: Mapping[str, Any]) -> None:
        self.variables = variables if variables == tuple(sorted(set(variables))) else (
            tuple(sorted(set(variables))))  # fmt: skip
        self.values = values
        self._native: Any = None

    def native(self) -> Any:
        if self._native is None:
            data = {name: self.values.get(name) for name in self.variables}
            self._native = _env(self.variables).Activation(data=data)
        return self._native


class Program:
    """A compiled expression, reusable and safe to share between threads."""

    def __init__(self, source: str, expression: Any, variables: tuple[str, ...]) -> None:
        self.source = source
        self.variables = variables
        self._expression = expression

    def evaluate(self, activation: Mapping[str, Any] | Bound) -> Any:
        try:
            if isinstance(activation, Bound) and activation.variables == self.variables:
                value = self._expression.eval(activation=activation.native())
            else:
                values = activation.values if isinstance(activation, Bound) else activation
                data = {name: values.get(name) for name in self.variables}
                value = self._expression.eval(data=data)
        except RuntimeError as err:
            raise EvalError(_translate(str(err))) from err
        if value.type() == cel.Type.ERROR:
            raise EvalError(_translate(str(value.value())))
        return library.to_python(value.plain_value())

    def ast(self) -> bytes:
        """The checked expression (cel.expr.CheckedExpr in an Any), for cost.py."""
        data: bytes = self._expression.serialize()
        return data


def compile(source: str, variables: Iterable[str]) -> Program:
    names = tuple(sorted(set(variables)))
    if not isinstance(source, str) or not source.strip():
        raise CompileError("ERROR: <input>:1:1: expression is empty")
    env = _env(names)
    try:
        expression = env.compile(source)
    except RuntimeError as err:
        text = _clean(str(err))
        if _TERNARY not in text or text.count("ERROR:") != 1:
            raise CompileError(text) from err
        # cel-go joins a conditional's branch types to dyn (`c ? 'text' : null`,
        # in Kubernetes' own auditAnnotations example); cel-cpp's checker does
        # not: such an expression is parsed and run without the type check.
        try:
            expression = env.compile(source, disable_check=True)
        except RuntimeError as again:
            raise CompileError(_clean(str(again))) from again
    return Program(source, expression, names)


_TERNARY = "found no matching overload for '_?_:_'"


_NO_KEY = re.compile(r'Key not found in map : "?([^"]*)"?')


def _translate(text: str) -> str:
    """cel-cpp's runtime messages in cel-go's words where users match them."""
    text = _clean(text)
    m = _NO_KEY.search(text)
    if m:
        return f"no such key: {m.group(1)}"
    if "Iteration budget exceeded" in text:
        return "operation cancelled: actual cost limit exceeded"
    if text.startswith("No matching overloads found"):
        return "no such overload"
    return text
