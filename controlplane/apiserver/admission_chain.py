"""The part of kube-apiserver's admission chain that follows the mutating
plugins, for the registry's writes: the mutating webhooks (what they
change decoded and validated again by the caller's `again`), the
validating admission (PodSecurity, the CSR plugins), the validating
webhooks; the registry then runs the plugins marked `last` (ResourceQuota,
which charges the final object). A `last` plugin with a `create` method
(ResourceQuota's) charges a create as it is stored: the registry passes it
the write (`store_create`), so the charge and the object share one store
transaction, and calls it beforehand only for a dry run (`deferred`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, Protocol, TypeVar

from controlplane.apiserver.admission_context import Attributes, Webhooks

Object = dict[str, Any]
P = TypeVar("P")


class CreateWriter(Protocol):
    """A `last` plugin's create: stores obj (as `data` under `key`) with its
    charge and returns the revision, or None when it has nothing to charge."""

    def __call__(self, reg: Any, info: Any, obj: Object, key: str, data: bytes) -> int | None: ...


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


def deferred(plugin: object, defer: bool) -> bool:
    """Whether the registry leaves `plugin` to the write (store_create)."""
    return defer and callable(getattr(plugin, "create", None))


def store_create(
    plugins: Iterable[object], reg: Any, info: Any, obj: Object, key: str, data: bytes,
    create: Callable[[str, bytes], int],
) -> int:  # fmt: skip
    """Store a create through the `last` plugin that charges it, else `create`."""
    for plugin in split(plugins)[1]:
        write: CreateWriter | None = getattr(plugin, "create", None)
        if write is not None:
            rev = write(reg, info, obj, key, data)
            if rev is not None:
                return rev
    return create(key, data)
