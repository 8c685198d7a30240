"""Server-side apply and metadata.managedFields: `kubectl apply --server-side`.

Every field of an object is owned by the managers that last set it, recorded
in metadata.managedFields as FieldsV1 sets: nested maps whose keys are
`f:<field>` (a map field), `k:{"name":"nginx"}` (an item of a list merged by
key), `v:<json>` (a value of a set-like primitive list) and `.` (the node
itself, when it also has children). Lists merge as strategic merge patch
merges them (patch_meta.PATCH_META, one table): by merge key, as a set, or
atomic (owned and replaced whole).

`apply(live, applied, manager, force, kind)` merges an applier's whole
configuration into the live object. A field the configuration changes that
another manager owns is a conflict (errors.Conflict, worded as
kube-apiserver words it) unless `force`, which takes the field over. A field
that the manager applied before and no longer applies is removed, unless
another manager owns it too. `updated_entries(old, new, manager)` (and
`record_update`, its copy-returning form) is what the registry calls on every
other write (create, update, patch, status and scale): the writer owns what
it changed, and the others lose it; an untracked object stays untracked until
its first apply (before-first-apply); Update entries are capped at ten (the
oldest merged into ancient-changes).

Pure: no storage, no I/O; inputs are never modified.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from controlplane.api import kinds
from controlplane.api.fieldsets import (
    Object,
    Path,
    created_doc,
    diff,
    edited,
    flatten,
    from_fields_v1,
    join,
    key_element,
    managed_part,
    path_string,
    to_fields_v1,
)
from controlplane.api.jsoncodec import clone, loads_or_none
from controlplane.api.patch_meta import field_meta
from controlplane.client.errors import Conflict, Invalid
from machinery import rfc3339

APPLY = "Apply"
UPDATE = "Update"
BEFORE_FIRST_APPLY = "before-first-apply"
ANCIENT_CHANGES = "ancient-changes"
MAX_UPDATE_MANAGERS = 10  # kube-apiserver's cap on Update entries


class ApplyConflict(Conflict):
    """An apply that would change fields other managers own. `causes` are the
    metav1.StatusCause entries: FieldManagerConflict with the field path."""

    def __init__(self, message: str, causes: list[dict[str, str]]) -> None:
        super().__init__(message)
        self.causes = causes


@dataclass
class _Entry:
    manager: str
    operation: str
    api_version: str
    time: str
    fields: set[Path]
    subresource: str = ""

    @property
    def owner(self) -> tuple[str, str, str, str]:
        """What identifies an entry: manager, operation, apiVersion, subresource."""
        return (self.manager, self.operation, self.api_version, self.subresource)


# ---- managedFields ---------------------------------------------------------------------


def _raw_entries(obj: Object | None) -> list[dict[str, Any]]:
    """metadata.managedFields as stored, checked to be a list of entries."""
    if not obj:
        return []
    raw = (obj.get("metadata") or {}).get("managedFields") or []
    if not isinstance(raw, list):
        raise Invalid("metadata.managedFields: must be a list")
    for i, e in enumerate(raw):
        if not isinstance(e, dict) or not isinstance(e.get("manager", ""), str):
            raise Invalid(f"metadata.managedFields[{i}]: must be an object with a manager")
    return raw


def _entry(e: dict[str, Any]) -> _Entry:
    return _Entry(
        manager=str(e.get("manager", "")),
        operation=str(e.get("operation", UPDATE)),
        api_version=str(e.get("apiVersion", "")),
        time=str(e.get("time", "")),
        fields=from_fields_v1(e.get("fieldsV1") or {}),
        subresource=str(e.get("subresource", "")),
    )


def _entries(obj: Object | None) -> list[_Entry]:
    return [_entry(e) for e in _raw_entries(obj)]


def _owns(doc: Any, path: Path) -> bool:
    """Whether a FieldsV1 document lists `path` (without parsing all of it)."""
    node = doc
    for element in path:
        if not isinstance(node, dict):
            return False
        node = node.get(element)
    return isinstance(node, dict) and (not node or "." in node)


def _render(entries: list[_Entry]) -> list[dict[str, Any]]:
    out = []
    for e in entries:
        if not e.fields:
            continue
        out.append(
            _raw(e.manager, e.operation, e.api_version, e.time, e.subresource,
                 to_fields_v1(e.fields))
        )  # fmt: skip
    return out


def _with_entries(obj: Object, entries: list[_Entry]) -> Object:
    return _with_managed_fields(obj, _render(entries))


def _with_managed_fields(obj: Object, raws: list[dict[str, Any]]) -> Object:
    """obj with metadata.managedFields set to `raws` (none: removed), in place."""
    metadata = obj.setdefault("metadata", {})
    if raws:
        metadata["managedFields"] = raws
    else:
        metadata.pop("managedFields", None)
    return obj


# ---- writes ------------------------------------------------------------------------


def record_update(
    old: Object | None,
    new: Object,
    manager: str,
    *,
    kind: str = "",
    subresource: str = "",
    now: str | None = None,
) -> Object:
    """`new` (a copy) with managedFields updated for a non-apply write by
    `manager`: see `updated_entries`."""
    entries = updated_entries(old, new, manager, kind=kind, subresource=subresource, now=now)
    return _with_managed_fields(clone(new), entries)


def updated_entries(
    old: Object | None,
    new: Object,
    manager: str,
    *,
    kind: str = "",
    subresource: str = "",
    now: str | None = None,
) -> list[dict[str, Any]]:
    """The managedFields of `new` after a non-apply write by `manager`
    (`kind`: the kinds key, when the object's Kind name is not enough;
    `subresource`: the one written through, recorded in the entry).

    The writer owns the fields it added or changed; every other manager
    loses those, and fields the write removed leave every set. A write that
    changes no field changes no entry (nor its time); an object with no
    entries gets none (see below). Managed fields the
    client sent changed on purpose are kept as sent (an empty list clears
    them), as Kubernetes does. Entries nobody's field set changes are
    kept as stored, not parsed; neither `old` nor `new` is changed.
    """
    sent = (new.get("metadata") or {}).get("managedFields")
    stored = (old.get("metadata") or {}).get("managedFields") if old else None
    if old is not None and sent is not None and sent != stored:
        _entries(new)  # validates the client's list
        return list(sent)
    kind = kind or str(new.get("kind", ""))
    api_version = str(new.get("apiVersion", ""))
    if old is None:  # a create: the writer owns every field, in one walk
        doc = created_doc(kind, managed_part(new))
        if not doc:
            return []
        return [_raw(manager, UPDATE, api_version, now or rfc3339.now(), subresource, doc)]
    raws = _raw_entries(old)
    if not raws:
        # As kube-apiserver skips them: an object whose writes were never
        # tracked (stored before managedFields, or cleared) stays untracked
        # until its first apply, which gives its fields to before-first-apply.
        return []
    present: set[Path] = set()
    gone: set[Path] = set()
    diff(kind, managed_part(old), managed_part(new), (), "", present, gone)
    changed = present | gone
    if not changed:
        return list(raws)
    stamp = now or rfc3339.now()
    owner = (manager, UPDATE, api_version, subresource)
    kept: list[dict[str, Any]] = []
    found = False
    for raw in raws:
        if not found and _entry_key(raw) == owner:
            # The writer's own entry: what it owned but this write removed
            # goes, what it set comes in (edited, not parsed and rebuilt).
            found = True
            doc = edited(raw.get("fieldsV1"), gone, present)
            kept += [_raw(manager, UPDATE, api_version, stamp, subresource, doc)] if doc else []
        elif any(_owns(raw.get("fieldsV1"), p) for p in changed):
            # Another manager loses what this write changed.
            doc = edited(raw.get("fieldsV1"), changed, set())
            kept += [{**raw, "fieldsV1": doc}] if doc else []
        else:
            kept.append(raw)  # untouched: kept as stored, not parsed
    if not found and present:
        kept.append(_raw(manager, UPDATE, api_version, stamp, subresource, to_fields_v1(present)))
        return _capped(kept)
    return kept


def _capped(raws: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """At most MAX_UPDATE_MANAGERS Update entries, as kube-apiserver keeps
    them: the oldest are merged, per apiVersion, into `ancient-changes`
    entries, so no client grows an object by naming ever new managers."""
    updates = [e for e in raws if e.get("operation", UPDATE) == UPDATE]
    if len(updates) <= MAX_UPDATE_MANAGERS:
        return raws
    oldest = sorted(updates, key=lambda e: str(e.get("time", "")))
    first: dict[str, dict[str, Any]] = {}  # apiVersion -> the oldest entry of it
    buckets: dict[str, dict[str, Any]] = {}  # apiVersion -> its ancient-changes entry
    replaced: dict[int, dict[str, Any] | None] = {}  # id(entry) -> its bucket, or None: merged
    count = len(updates)
    for e in oldest:
        if count <= MAX_UPDATE_MANAGERS:
            break
        version = str(e.get("apiVersion", ""))
        if version not in first:
            first[version] = e  # renamed only when another of its version joins it
            continue
        bucket = buckets.get(version)
        if bucket is None:
            bucket = buckets[version] = {**first[version], "manager": ANCIENT_CHANGES}
            bucket.pop("subresource", None)
            replaced[id(first[version])] = bucket
        fields = from_fields_v1(bucket.get("fieldsV1")) | from_fields_v1(e.get("fieldsV1"))
        bucket.update(fieldsV1=to_fields_v1(fields), time=e.get("time", bucket.get("time")))
        replaced[id(e)] = None
        count -= 1
    out = []
    for e in raws:
        kept = replaced.get(id(e), e)
        if kept is not None:
            out.append(kept)
    return out


def _raw(
    manager: str, operation: str, api_version: str, time: str, subresource: str, doc: Any
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": time,
        "fieldsType": "FieldsV1",
        "fieldsV1": doc,
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def _entry_key(raw: dict[str, Any]) -> tuple[str, str, str, str]:
    return (
        str(raw.get("manager", "")),
        str(raw.get("operation", UPDATE)),
        str(raw.get("apiVersion", "")),
        str(raw.get("subresource", "")),
    )


def apply(
    live: Object | None,
    applied: Object,
    manager: str,
    force: bool,
    kind: str,
    *,
    subresource: str = "",
    now: str | None = None,
) -> Object:
    """The object after `manager` applies the configuration `applied` to `live`
    (None: create). Raises ApplyConflict (an errors.Conflict) listing every
    field another manager owns that `applied` would change, unless `force`."""
    if not isinstance(applied, dict):
        raise Invalid("apply: the configuration must be an object")
    for field in ("apiVersion", "kind"):
        if not applied.get(field):
            raise Invalid(f"{field}: required in an apply configuration")
    if not manager:
        raise Invalid("fieldManager: required for apply")
    config = _for_subresource(kind, clone(applied), subresource)
    (config.get("metadata") or {}).pop("managedFields", None)
    api_version = str(config["apiVersion"])
    stamp = now or rfc3339.now()
    wanted = flatten(kind, config)
    me = _Entry(manager, APPLY, api_version, stamp, set(wanted), subresource)
    if live is None:
        return _with_entries(_merge(kind, {}, config), [me])
    current = flatten(kind, live)
    entries = _entries(live)
    if not entries and current:
        # As Kubernetes does for an object nobody has applied or updated with
        # field tracking: its fields belong to "before-first-apply".
        fields = set(current)
        entries = [_Entry(BEFORE_FIRST_APPLY, UPDATE, api_version, stamp, fields, subresource)]
    others = [e for e in entries if not (e.manager == manager and e.operation == APPLY)]
    mine_before = next((e for e in entries if e.manager == manager and e.operation == APPLY), None)
    differing = {p for p, v in wanted.items() if p not in current or current[p] != v}
    conflicts = [(e, sorted(e.fields & differing)) for e in others if e.fields & differing]
    if conflicts and not force and manager == KUBECTL:
        # kube-apiserver's lastAppliedManager: `kubectl apply --server-side` on
        # an object `kubectl apply` made may take the fields its last-applied
        # configuration names (kubectl then migrates the ownership).
        allowed = _last_applied_fields(kind, live, current)
        force = all(set(paths) <= allowed for _, paths in conflicts)
    if conflicts and not force:
        raise _conflict_error(conflicts)
    if force:
        for e in others:
            e.fields -= differing
    result = clone(live)
    if mine_before is not None:
        still_owned = set().union(*(e.fields for e in others)) if others else set()
        dropped = mine_before.fields - me.fields
        for path in sorted(dropped, key=len):  # parents first: their children go with them
            if path in still_owned or any(o[: len(path)] == path for o in still_owned):
                continue
            if _is_item_key(path):
                continue  # an item stays identified while it is in the list
            _remove(result, path)
    result = _merge(kind, result, config)
    if manager == KUBECTL:
        _sync_last_applied(result, applied)
    updated = [me if e is mine_before else e for e in entries]
    if mine_before is None:
        updated.append(me)
    return _with_entries(result, updated)


KUBECTL = "kubectl"  # the field manager of `kubectl apply --server-side`
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _last_applied(obj: Object) -> Any:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return loads_or_none(annotations.get(LAST_APPLIED) if isinstance(annotations, dict) else None)


def _last_applied_fields(kind: str, live: Object, current: dict[Path, Any]) -> set[Path]:
    """The fields the last-applied annotation of `live` names and `live`
    (flattened: `current`) still holds as applied, none without one: a field
    changed since (`kubectl scale`, an edit) still conflicts, as in
    kube-apiserver's allowedConflictsFromLastApplied."""
    config = _last_applied(live)
    if not isinstance(config, dict) or config.get("apiVersion") != live.get("apiVersion"):
        return set()
    return {p for p, v in flatten(kind, config).items() if p in current and current[p] == v}


def _sync_last_applied(result: Object, applied: Object) -> None:
    """kube-apiserver's lastAppliedUpdater: an object that has the annotation
    keeps it equal to what kubectl last applied, server-side too, so a later
    client-side `kubectl apply` computes its patch from the right base."""
    if _last_applied(result) is None:
        return
    config = clone(applied)
    meta = config.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(LAST_APPLIED, None)
            if not annotations:
                meta.pop("annotations")
    text = json.dumps(config, separators=(",", ":"), sort_keys=True)
    result["metadata"]["annotations"][LAST_APPLIED] = text


def _for_subresource(kind: str, config: Object, subresource: str) -> Object:
    """The part of a configuration an apply through `subresource` may set, as
    Kubernetes resets the rest: the main resource of a kind with a status
    subresource leaves status alone; the status subresource sets only status."""
    if subresource == "status":
        return {
            k: v for k, v in config.items() if k in ("apiVersion", "kind", "metadata", "status")
        }
    try:
        has_status = kinds.by_kind(kind).has_status
    except kinds.UnknownKind:
        has_status = False
    if not subresource and has_status:
        config.pop("status", None)
    return config


def _conflict_error(conflicts: list[tuple[_Entry, list[Path]]]) -> ApplyConflict:
    total = sum(len(paths) for _, paths in conflicts)
    causes = []
    parts = []
    for entry, paths in conflicts:
        who = f'"{entry.manager}"'
        using = f" using {entry.api_version}" if entry.api_version else ""
        shown = [path_string(p) for p in paths]
        if len(shown) == 1 and len(conflicts) == 1:
            parts.append(f"conflict with {who}{using}: {shown[0]}")
        else:
            noun = "conflict" if len(shown) == 1 else "conflicts"
            parts.append(f"{noun} with {who}{using}:\n" + "\n".join(f"- {s}" for s in shown))
        causes += [
            {"type": "FieldManagerConflict", "message": f"conflict with {who}{using}", "field": s}
            for s in shown
        ]
    noun = "conflict" if total == 1 else "conflicts"
    return ApplyConflict(f"Apply failed with {total} {noun}: " + "\n".join(parts), causes)


# ---- object surgery -------------------------------------------------------------------


def _find_item(items: list[Any], element: str) -> int | None:
    keys = json.loads(element[2:])
    for i, item in enumerate(items):
        if isinstance(item, dict) and all(item.get(k) == v for k, v in keys.items()):
            return i
    return None


def _is_item_key(path: Path) -> bool:
    """Whether `path` is the merge-key field of a list item (`k:{"name":..}`, `f:name`)."""
    return (
        len(path) >= 2
        and path[-2].startswith("k:")
        and path[-1].startswith("f:")
        and path[-1][2:] in json.loads(path[-2][2:])
    )


def _remove(obj: Object, path: Path) -> None:
    """Delete the node at `path` from `obj` in place (no-op when absent)."""
    node: Any = obj
    for element in path[:-1]:
        if element.startswith("f:") and isinstance(node, dict):
            node = node.get(element[2:])
        elif element.startswith("k:") and isinstance(node, list):
            at = _find_item(node, element)
            node = None if at is None else node[at]
        else:
            return
        if node is None:
            return
    last = path[-1]
    if last.startswith("f:") and isinstance(node, dict):
        node.pop(last[2:], None)
    elif last.startswith("k:") and isinstance(node, list):
        at = _find_item(node, last)
        if at is not None:
            del node[at]
    elif last.startswith("v:") and isinstance(node, list):
        value = json.loads(last[2:])
        node[:] = [v for v in node if v != value]


def _merge(kind: str, live: Object, config: Object) -> Object:
    merged = _merge_value(kind, live, config, "")
    assert isinstance(merged, dict)
    return merged


def _merge_value(kind: str, live: Any, config: Any, meta_path: str) -> Any:
    if isinstance(config, dict):
        out = dict(live) if isinstance(live, dict) else {}
        for key, value in config.items():
            if value is None:
                continue
            out[key] = _merge_value(kind, out.get(key), value, join(meta_path, key))
        return out
    if isinstance(config, list):
        meta = field_meta(kind, meta_path)
        if meta is None or not meta.merges or not isinstance(live, list):
            return clone(config)
        out_list = list(live)
        if not meta.merge_key:
            out_list += [v for v in config if v not in out_list]
            return out_list
        for item in config:
            at = None
            if isinstance(item, dict):
                at = _find_item(out_list, key_element(meta.merge_key, item))
            if at is None:
                out_list.append(clone(item))
            else:
                out_list[at] = _merge_value(kind, out_list[at], item, meta_path)
        return out_list
    return config
