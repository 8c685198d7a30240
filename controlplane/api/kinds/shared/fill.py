"""The two helpers defaulting is written with: a child object created when
missing, and a list field's items. A value of the wrong type is left alone
(validation reports it), so defaulting never fails and never rewrites what a
user set."""

from __future__ import annotations

from typing import Any

Object = dict[str, Any]


def child(obj: Object, key: str) -> Object:
    """obj[key] as a dict, created if missing; a detached dict (changes go
    nowhere) when obj[key] is something else."""
    value = obj.get(key)
    if value is None:
        value = {}
        obj[key] = value
    elif not isinstance(value, dict):
        return {}
    return value


def listed(value: Any) -> list[Any]:
    """A list field's items; a value of another type is left to validation."""
    return value if isinstance(value, list) else []
