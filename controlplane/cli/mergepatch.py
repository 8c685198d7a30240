"""JSON merge patch (RFC 7386): apply one, and compute one from two documents.

`skiffctl patch` sends merge patches; `skiffctl apply` computes the patch
from the last-applied manifest to the new one (so fields dropped from the
manifest are removed) and test fakes apply patches the way the API server
does. Pure functions on plain JSON values; inputs are never mutated.
"""

from __future__ import annotations

import copy
from typing import Any


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """`target` with `patch` merged in: null deletes, objects merge, the rest replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result: dict[str, Any] = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def create_merge_patch(original: Any, modified: Any) -> Any:
    """The merge patch that turns `original` into `modified` ({} when equal)."""
    if not isinstance(original, dict) or not isinstance(modified, dict):
        return copy.deepcopy(modified)
    patch: dict[str, Any] = {}
    for key in original:
        if key not in modified:
            patch[key] = None
    for key, value in modified.items():
        if key not in original:
            patch[key] = copy.deepcopy(value)
        elif original[key] != value:
            if isinstance(original[key], dict) and isinstance(value, dict):
                patch[key] = create_merge_patch(original[key], value)
            else:
                patch[key] = copy.deepcopy(value)
    return patch
