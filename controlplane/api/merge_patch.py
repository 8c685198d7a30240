"""JSON merge patch (RFC 7386): what `patch` applies to a stored object."""

from __future__ import annotations

from typing import Any

from controlplane.api.jsoncodec import clone


def merge_patch(target: Any, patch: Any) -> Any:
    """The result of applying `patch` to `target`; neither is modified.

    A dict patch merges key by key, `null` deletes a key, anything else
    (lists included) replaces the value.
    """
    if not isinstance(patch, dict):
        return clone(patch) if isinstance(patch, list) else patch
    result: dict[str, Any] = clone(target) if isinstance(target, dict) else {}
    _merge_into(result, patch)
    return result


def _merge_into(result: dict[str, Any], patch: dict[str, Any]) -> None:
    """Apply a dict patch to `result` (already a copy of its own) in place."""
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            current = result.get(key)
            if not isinstance(current, dict):
                current = result[key] = {}
            _merge_into(current, value)
        else:
            result[key] = clone(value) if isinstance(value, list) else value  # scalars: immutable


def merge_patch_shared(target: Any, patch: Any) -> Any:
    """merge_patch without copying what the patch leaves alone: the result
    shares those parts with `target` (so it must be read, never changed, as
    `target` must not be). Neither is modified; the cost follows the patch,
    not the object."""
    if not isinstance(patch, dict):
        return clone(patch) if isinstance(patch, list) else patch
    result: dict[str, Any] = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            result[key] = merge_patch_shared(result.get(key), value)
        else:
            result[key] = clone(value) if isinstance(value, list) else value
    return result
