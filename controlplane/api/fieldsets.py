"""FieldsV1 field sets: which fields of an object a manager owns.

A field set is a set of paths from the object's root, each a tuple of
FieldsV1 keys: `f:<field>` (a map field), `k:{"name":"nginx"}` (an item of a
list merged by key), `v:<json>` (a value of a set-like primitive list) and
`.` (the node itself, when it also has children). Lists are walked as
strategic merge patch merges them (patch_meta.PATCH_META, one table): by
merge key, as a set, or atomic (a leaf). This module turns objects into path
sets (`flatten`), finds what a write changed (`diff`), builds a create's set
in one walk (`created_doc`), converts between paths and the nested FieldsV1
documents stored in managedFields (`to_fields_v1`, `from_fields_v1`) and
edits a stored document in place of re-rendering it (`edited`).
server_side_apply keeps the managers' entries on top of it.

Pure: no storage, no I/O; inputs are never modified.
"""

from __future__ import annotations

import json
from typing import Any

from controlplane.api import crd
from controlplane.api.jsoncodec import dumps, loads
from controlplane.api.patch_meta import field_meta

Object = dict[str, Any]
Path = tuple[str, ...]  # FieldsV1 keys from the root: ("f:spec", "f:replicas")

# Metadata the server owns: never part of anyone's field set.
_SERVER_METADATA = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
)
_MEMBER = object()  # the value of a path that is an item or a set value


def _json(value: Any) -> str:
    """Compact JSON with sorted keys, as FieldsV1 element names spell values
    (scalars, the common case, through the fast codec)."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return dumps(value).decode()


def key_element(meta_key: str, item: Any) -> str:
    return f"k:{{{_json(meta_key)}:{_json(item.get(meta_key))}}}"


def _value_element(value: Any) -> str:
    return "v:" + _json(value)


def join(meta_path: str, key: str) -> str:
    return f"{meta_path}.{key}" if meta_path else key


def _leaves(kind: str, value: Any, path: Path, meta_path: str, out: dict[Path, Any]) -> None:
    """Add to `out` (path -> value) every owned node under `value`: map
    leaves, atomic lists, list items (value _MEMBER) and their fields, set
    values. Null map values are no fields."""
    if isinstance(value, dict):
        if not value and path:
            out[path] = {}
        for key, child in value.items():
            if child is not None:
                _leaves(kind, child, (*path, f"f:{key}"), f"{meta_path}.{key}", out)
        return
    if isinstance(value, list):
        meta = field_meta(kind, meta_path[1:])
        if meta is not None and meta.merges:
            key_field = meta.merge_key
            for item in value:
                if not key_field:
                    out[(*path, _value_element(item))] = _MEMBER
                elif isinstance(item, dict) and key_field in item:
                    item_path = (*path, key_element(key_field, item))
                    out[item_path] = _MEMBER
                    for key, child in item.items():
                        if child is not None:
                            _leaves(
                                kind, child, (*item_path, f"f:{key}"), f"{meta_path}.{key}", out
                            )
            return
    out[path] = value


def managed_part(obj: Object | None) -> Object:
    """The part of an object managers own: no apiVersion, kind or server metadata."""
    if not obj:
        return {}
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    metadata = body.get("metadata")
    if isinstance(metadata, dict):
        body["metadata"] = {k: v for k, v in metadata.items() if k not in _SERVER_METADATA}
        if not body["metadata"]:
            del body["metadata"]
    return body


def flatten(kind: str, obj: Object | None) -> dict[Path, Any]:
    out: dict[Path, Any] = {}
    _leaves(kind, managed_part(obj), (), "", out)
    return out


def _fields_doc(kind: str, value: Object, meta_path: str) -> dict[str, Any]:
    """The FieldsV1 document of every owned field under a map, built in one
    walk: what `to_fields_v1(set(flatten(...)))` gives, without the path set
    (a create's entry, on the hot path of every create)."""
    doc: dict[str, Any] = {}
    for key, child in value.items():
        if child is None:
            continue
        node: dict[str, Any] | None = {}  # a leaf
        if isinstance(child, dict):
            if child:  # a map of nulls owns nothing
                node = _fields_doc(kind, child, f"{meta_path}.{key}") or None
        elif isinstance(child, list):
            node = _list_node(kind, child, f"{meta_path}.{key}")
        if node is not None:
            doc[f"f:{key}"] = node
    return doc


_NODES: dict[tuple[str, str, bytes], bytes] = {}  # (kind, field, its JSON) -> its node's JSON
_NODES_MAX = 512


def created_doc(kind: str, body: Object) -> dict[str, Any]:
    """`_fields_doc` of a created object. The nodes of its big parts (spec,
    data, status) come from a small cache keyed by their JSON: the pods a
    ReplicaSet, Job or StatefulSet creates share one template, so most
    creates walk only their metadata. Cached as JSON, so no two objects
    share a dict."""
    doc: dict[str, Any] = {}
    cached = not crd.is_custom(kind)  # a custom kind's list facts change with its CRD
    for key, child in body.items():
        if cached and key != "metadata" and isinstance(child, dict) and child:
            raw = dumps(child)
            cache_key = (kind, key, raw)
            hit = _NODES.get(cache_key)
            if hit is None:
                hit = dumps(_fields_doc(kind, child, f".{key}") or None)
                if len(_NODES) >= _NODES_MAX:
                    _NODES.clear()
                _NODES[cache_key] = hit
            node = loads(hit)
        else:
            node = _fields_doc(kind, {key: child}, "").get(f"f:{key}")
        if node is not None:
            doc[f"f:{key}"] = node
    return doc


def _list_node(kind: str, items: list[Any], meta_path: str) -> dict[str, Any] | None:
    """A list's FieldsV1 node: a leaf when atomic, else its items (None: an
    empty merged list owns nothing)."""
    meta = field_meta(kind, meta_path[1:])
    if meta is None or not meta.merges:
        return {}
    key = meta.merge_key
    doc: dict[str, Any] = {}
    for item in items:
        if not key:
            doc[_value_element(item)] = {}
        elif isinstance(item, dict) and key in item:
            children = _fields_doc(kind, item, meta_path)
            doc[key_element(key, item)] = {".": {}, **children} if children else {}
    return doc or None


def diff(
    kind: str, old: Any, new: Any, path: Path, meta_path: str, present: set[Path], gone: set[Path]
) -> None:
    """The owned paths a write changed: `present` gets those set or changed in
    `new`, `gone` those only `old` has. Equal subtrees are skipped whole (one
    C-speed comparison), so a status update never walks the spec."""
    if old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict) and (not path or (old and new)):
        for key in old.keys() | new.keys():
            o, n = old.get(key), new.get(key)
            if o != n:
                diff(kind, o, n, (*path, f"f:{key}"), f"{meta_path}.{key}", present, gone)
        return
    if isinstance(old, list) and isinstance(new, list):
        meta = field_meta(kind, meta_path[1:])
        if meta is not None and meta.merges and meta.merge_key:
            _diff_items(kind, old, new, meta.merge_key, path, meta_path, present, gone)
            return
        if meta is not None and meta.merges:
            before = {_value_element(v) for v in old}
            after = {_value_element(v) for v in new}
            present.update((*path, e) for e in after - before)
            gone.update((*path, e) for e in before - after)
            return
    _diff_leaves(kind, old, new, path, meta_path, present, gone)


def _diff_leaves(
    kind: str, old: Any, new: Any, path: Path, meta_path: str, present: set[Path], gone: set[Path]
) -> None:
    before: dict[Path, Any] = {}
    after: dict[Path, Any] = {}
    if old is not None:
        _leaves(kind, old, path, meta_path, before)
    if new is not None:
        _leaves(kind, new, path, meta_path, after)
    present.update(p for p, v in after.items() if p not in before or before[p] != v)
    gone.update(before.keys() - after.keys())


def _diff_items(
    kind: str,
    old: list[Any],
    new: list[Any],
    key: str,
    path: Path,
    meta_path: str,
    present: set[Path],
    gone: set[Path],
) -> None:
    """`diff` of a list merged by `key`, item by item."""

    def index(items: list[Any]) -> dict[str, Any] | None:
        out = {}
        for item in items:
            if isinstance(item, dict) and key in item:
                element = key_element(key, item)
                if element in out:
                    return None  # duplicate keys: compare the whole lists
                out[element] = item
        return out

    before, after = index(old), index(new)
    if before is None or after is None:
        _diff_leaves(kind, old, new, path, meta_path, present, gone)
        return
    for element in before.keys() | after.keys():
        o, n = before.get(element), after.get(element)
        if o == n:
            continue
        if o is None or n is None:
            _diff_leaves(kind, [o] if o else [], [n] if n else [], path, meta_path, present, gone)
            continue
        item_path = (*path, element)
        for field in o.keys() | n.keys():
            if o.get(field) != n.get(field):
                diff(
                    kind,
                    o.get(field),
                    n.get(field),
                    (*item_path, f"f:{field}"),
                    f"{meta_path}.{field}",
                    present,
                    gone,
                )


def to_fields_v1(paths: set[Path]) -> dict[str, Any]:
    """A FieldsV1 document for a set of paths."""
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for element in path:
            node = node.setdefault(element, {})
    for path in paths:
        node = root
        for element in path:
            node = node[element]
        if node:
            node["."] = {}
    return root


def edited(doc: Any, removed: set[Path], added: set[Path]) -> dict[str, Any]:
    """A FieldsV1 document listing (doc's paths - removed) | added, shaped as
    `to_fields_v1` shapes it: the few paths a write changed are edited in,
    instead of parsing the whole set and rendering it again. `doc` is not
    changed: only the nodes along the edited paths are copied, the rest is
    shared with it (so the result is read, never changed, as doc is)."""
    out: dict[str, Any] = dict(doc) if isinstance(doc, dict) else {}
    own = {id(out)}  # the nodes copied (or made) here, which may change
    for path in removed - added:
        _owned(out, path, own)
        _drop(out, path)
    for path in added:
        _owned(out, path, own)
        _put(out, path)
    return out


def _owned(doc: dict[str, Any], path: Path, own: set[int]) -> None:
    """Copy the nodes along path that are still doc's source's (not in `own`)."""
    node = doc
    for element in path:
        child = node.get(element)
        if not isinstance(child, dict):
            return
        if id(child) not in own:
            child = node[element] = dict(child)
            own.add(id(child))
        node = child


def _drop(doc: dict[str, Any], path: Path) -> None:
    trail: list[dict[str, Any]] = [doc]
    for element in path:
        child = trail[-1].get(element)
        if not isinstance(child, dict):
            return  # not listed
        trail.append(child)
    node = trail[-1]
    if len(node) > (1 if "." in node else 0):  # it has children: it stays, unlisted
        node.pop(".", None)
        return
    # A leaf goes; so does every parent it leaves empty that was not listed
    # itself, and a listed parent left with no children is a leaf again.
    for depth in range(len(path) - 1, -1, -1):
        parent = trail[depth]
        del parent[path[depth]]
        if depth == 0 or parent:
            if depth and list(parent) == ["."]:
                parent.clear()
            return
        # `parent` is empty now: it was only a container; it goes too.


def _put(doc: dict[str, Any], path: Path) -> None:
    node = doc
    for i, element in enumerate(path):
        child = node.get(element)
        last = i == len(path) - 1
        if not isinstance(child, dict):
            child = node[element] = {}
            if last:
                return
        elif last:
            if child and "." not in child:
                child["."] = {}
            return
        elif not child:  # a listed leaf that now has children
            child["."] = {}
        node = child


def from_fields_v1(doc: Any, prefix: Path = ()) -> set[Path]:
    """The set of paths a FieldsV1 document lists."""
    out: set[Path] = set()
    if not isinstance(doc, dict):
        return out
    if prefix and (not doc or "." in doc):
        out.add(prefix)
    for key, child in doc.items():
        if key != ".":
            out |= from_fields_v1(child, (*prefix, key))
    return out


def path_string(path: Path) -> str:
    """`.spec.template.spec.containers[name="nginx"].image`, as conflicts print paths."""
    out = ""
    for element in path:
        tag, _, rest = element.partition(":")
        if tag == "f":
            out += f".{rest}"
        elif tag == "k":
            keys = json.loads(rest)
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in keys.items()) + "]"
        else:
            out += f"[={rest}]"
    return out
