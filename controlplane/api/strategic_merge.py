"""Kubernetes strategic merge patch: what `kubectl apply`, `patch` and `edit` send.

A strategic merge patch is a JSON merge patch that knows which lists merge
(patch_meta.PATCH_META): a list of objects with a merge key merges item by
item (containers by `name`, ports by `containerPort`, ...), a list of
primitives with the merge strategy (finalizers) is a union, every other list
is replaced. Directives refine it:

- `{"$patch": "delete"}` in a list item removes the item with that merge key;
  in a map, removes the map. `{"$patch": "replace"}` replaces the map (or,
  as a list item, the whole list) with the patch's; `merge` is the default.
- `$deleteFromPrimitiveList/<field>: [values]` removes values from a merged
  primitive list.
- `$setElementOrder/<field>: [...]` orders the merged list (items by merge
  key, primitives by value); items only the server has keep their place
  relative to the others, as Kubernetes merges the two orders.
- `$retainKeys: [fields]` on a map with the retainKeys strategy drops every
  field not listed (a Deployment strategy switching to Recreate).
- `null` deletes a map key.

Unknown kinds (custom resources) have no merge facts: Kubernetes answers 415
for a strategic merge patch of those, so callers check `supports(kind)`
first; `apply` itself falls back to JSON merge patch for them.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.jsoncodec import clone
from controlplane.api.merge_patch import merge_patch
from controlplane.api.patch_meta import field_meta
from controlplane.api.patch_meta import supports as _supports
from controlplane.client.errors import Invalid

PATCH = "$patch"
RETAIN_KEYS = "$retainKeys"
DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"
SET_ORDER = "$setElementOrder/"


def supports(kind: str) -> bool:
    """Whether strategic merge patch applies to `kind` (the built-in kinds)."""
    return _supports(kind)


def apply(original: dict[str, Any], patch: dict[str, Any], kind: str) -> dict[str, Any]:
    """`original` with the strategic merge patch `patch` applied; neither is modified.

    Raises errors.Invalid naming the field for a malformed patch.
    """
    if not isinstance(patch, dict):
        raise Invalid("strategic merge patch: must be a JSON object")
    if not supports(kind):
        result: dict[str, Any] = merge_patch(original, patch)
        return result
    merged = _merge_map(kind, clone(original) if isinstance(original, dict) else {}, patch, "")
    return merged if merged is not None else {}


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _merge_map(
    kind: str, original: dict[str, Any], patch: dict[str, Any], path: str
) -> dict[str, Any] | None:
    """Merge `patch` into `original` (a copy this function may change).
    None means "delete this map" (`$patch: delete`)."""
    directive = patch.get(PATCH)
    if directive == "delete":
        return None
    if directive == "replace":
        return _strip(kind, {k: v for k, v in patch.items() if k != PATCH}, path)
    if directive not in (None, "merge"):
        raise Invalid(f"{path or 'object'}.$patch: unknown directive {directive!r}")
    retain = patch.get(RETAIN_KEYS)
    if retain is not None:
        if not isinstance(retain, list) or not all(isinstance(k, str) for k in retain):
            raise Invalid(f"{_join(path, RETAIN_KEYS)}: must be a list of field names")
        for key in list(original):
            if key not in retain:
                del original[key]
    # The server's order of each list the patch orders, before any change.
    server = {
        k.removeprefix(SET_ORDER): list(original.get(k.removeprefix(SET_ORDER)) or [])
        for k in patch
        if k.startswith(SET_ORDER)
    }
    for key, value in patch.items():
        if key.startswith(DELETE_PRIMITIVE):
            field = key.removeprefix(DELETE_PRIMITIVE)
            _delete_primitives(original, field, value, _join(path, key))
    orders: dict[str, Any] = {}
    for key, value in patch.items():
        if key in (PATCH, RETAIN_KEYS) or key.startswith(DELETE_PRIMITIVE):
            continue
        if key.startswith(SET_ORDER):
            orders[key.removeprefix(SET_ORDER)] = value
            continue
        field_path = _join(path, key)
        if value is None:
            original.pop(key, None)
            continue
        current = original.get(key)
        if isinstance(value, dict):
            merged = _merge_map(
                kind, current if isinstance(current, dict) else {}, value, field_path
            )
            if merged is None:
                original.pop(key, None)
            else:
                original[key] = merged
        elif isinstance(value, list):
            original[key] = _merge_list(
                kind, current if isinstance(current, list) else [], value, field_path
            )
        else:
            original[key] = value
    for field, order in orders.items():
        if field in original:
            original[field] = _order(
                kind, original[field], order, server[field], _join(path, field)
            )
    return original


def _strip(kind: str, value: dict[str, Any], path: str) -> dict[str, Any]:
    """A patch value with its directives applied against nothing."""
    merged = _merge_map(kind, {}, value, path)
    return merged if merged is not None else {}


def _delete_primitives(original: dict[str, Any], field: str, values: Any, where: str) -> None:
    if not isinstance(values, list):
        raise Invalid(f"{where}: must be a list")
    current = original.get(field)
    if isinstance(current, list):
        original[field] = [v for v in current if v not in values]


def _merge_list(kind: str, original: list[Any], patch: list[Any], path: str) -> list[Any]:
    meta = field_meta(kind, path)
    replace = any(isinstance(i, dict) and i.get(PATCH) == "replace" for i in patch)
    items = [i for i in patch if not (isinstance(i, dict) and i.get(PATCH) == "replace")]
    if meta is None or not meta.merges or replace:
        return [_strip(kind, i, path) if isinstance(i, dict) else i for i in items]
    if not meta.merge_key:
        result = list(original)
        for item in items:
            if item not in result:
                result.append(item)
        return result
    key = meta.merge_key
    result = list(original)
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            raise Invalid(f"{path}[{n}]: must be an object with {key!r}")
        if key not in item:
            raise Invalid(f"{path}[{n}]: the merge key {key!r} is missing")
        at = next(
            (i for i, o in enumerate(result) if isinstance(o, dict) and o.get(key) == item[key]),
            None,
        )
        if item.get(PATCH) == "delete":
            if at is not None:
                del result[at]
            continue
        if at is None:
            result.append(_strip(kind, item, path))
        else:
            merged = _merge_map(kind, result[at], item, path)
            if merged is None:
                del result[at]
            else:
                result[at] = merged
    return result


def _order(kind: str, current: Any, order: Any, server: list[Any], path: str) -> Any:
    """`current` in the order `$setElementOrder` gives, as Kubernetes orders it:
    the items it names in its order, merged with the items only the server
    has (in their server order) by their positions in the server's list."""
    if not isinstance(order, list):
        raise Invalid(f"{path}: $setElementOrder must be a list")
    if not isinstance(current, list):
        return current
    meta = field_meta(kind, path)
    key = meta.merge_key if meta is not None else ""

    def ident(item: Any) -> Any:
        if key and isinstance(item, dict):
            return clone(item.get(key))
        return item

    wanted = [ident(o) for o in order]
    named = [next((c for c in current if ident(c) == w), None) for w in wanted]
    left = [c for c in named if c is not None]
    right = [c for c in current if ident(c) not in wanted]
    positions = [ident(c) for c in server]

    def before(a: Any, b: Any) -> bool:
        """Whether `a` comes before `b` in the server's list (both in it)."""
        ia, ib = ident(a), ident(b)
        return ia in positions and ib in positions and positions.index(ia) < positions.index(ib)

    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if j >= len(right) or (i < len(left) and before(left[i], right[j])):
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out
