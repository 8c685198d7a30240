"""The part of kube-apiserver's admission chain that follows the mutating
plugins, for the registry's writes: the mutating webhooks (what they
change decoded and validated again by the caller's `again`), the
validating admission (PodSecurity, the CSR plugins), the validating
webhooks; the registry then runs the plugins marked `last` (ResourceQuota,
which charges the final object).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from controlplane.apiserver.admission_context import Attributes, Webhooks

Object = dict[str, Any]
P = TypeVar("P")


def split(plugins: Iterable[P]) -> tuple[list[P], list[P]]:
    """(the mutating plugins, the ones marked `last`)."""
    first: list[P] = []
    last: list[P] = []
    for plugin in plugins:
        (last if getattr(plugin, "last", False) else first).append(plugin)
    return first, last


def after_mutating(
    a: Attributes,
    webhooks: Webhooks | None,
    validating: Sequence[Callable[[Attributes], None]],
    again: Callable[[Object], Object],
) -> Object:
    """The object as admitted (a.obj, or the mutating webhooks' version of it,
    passed through `again`); raises the error that refuses the write."""
    obj = a.obj
    if webhooks is not None:
        changed = webhooks.mutate(a)
        if changed is not None:
            obj = again(changed)
            a = replace(a, obj=obj)
    for validate in validating:
        validate(a)
    if webhooks is not None:
        webhooks.validate(a)
    return obj
