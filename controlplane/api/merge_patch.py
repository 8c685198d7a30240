"""JSON merge patch (RFC 7386): what `patch` applies to a stored object."""

from __future__ import annotations

import copy
from typing import Any


def merge_patch(target: Any, patch: Any) -> Any:
    """The result of applying `patch` to `target`; neither is modified.

    A dict patch merges key by key, `null` deletes a key, anything else
    (lists included) replaces the value.
    """
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result: dict[str, Any] = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
