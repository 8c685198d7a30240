"""The delegated group/versions in the discovery documents.

A delegated group/version (an APIService with a service) replaces any
local one of the same name: /apis lists it (available or not, as
kube-aggregator lists every APIService), /apis/<group> names its versions
by versionPriority, and aggregated discovery (what kubectl 1.33 asks for)
carries the resources its server answered at the last discovery check
that passed, with `freshness: Stale` when it is not available (no
resources when none ever passed), which
client-go reports as that group/version's error while the other groups
are used (`kubectl api-resources` goes on with the others). /openapi/v3
lists its document, proxied to the extension server; its /openapi/v2
paths and definitions are merged into the API server's.
"""

from __future__ import annotations

from typing import Any

from controlplane.apiserver.aggregator.availability import Delegate
from controlplane.apiserver.rest.discovery import aggregated_resources

Table = dict[str, Delegate]


def delegated_groups(table: Table) -> dict[str, list[str]]:
    """group -> its delegated versions, preferred (highest versionPriority) first."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for gv, delegate in table.items():
        group, _, version = gv.rpartition("/")
        if group:
            groups.setdefault(group, []).append((-delegate.version_priority, version))
    return {g: [v for _, v in sorted(vs)] for g, vs in groups.items()}


def _entries(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def merged_versions(group: str, local: list[str], table: Table) -> list[str]:
    """A group's versions: the delegated ones first, then the local ones left."""
    delegated = delegated_groups(table).get(group, [])
    return [*delegated, *(v for v in local if v not in delegated)]


def group_list(doc: dict[str, Any], table: Table) -> dict[str, Any]:
    """/apis (APIGroupList) with the delegated versions merged in."""
    if not table:
        return doc
    delegated = delegated_groups(table)
    groups = []
    seen = set()
    for entry in doc.get("groups") or []:
        name = entry["name"]
        seen.add(name)
        if name in delegated:
            local = [v["version"] for v in entry["versions"]]
            entry = _entries(name, merged_versions(name, local, table))
        groups.append(entry)
    groups += [_entries(g, vs) for g, vs in sorted(delegated.items()) if g not in seen]
    return {**doc, "groups": groups}


def group(name: str, local: dict[str, Any] | None, table: Table) -> dict[str, Any] | None:
    """/apis/<group> (APIGroup) with its delegated versions."""
    delegated = delegated_groups(table).get(name)
    if not delegated:
        return local
    versions = [v["version"] for v in (local or {}).get("versions") or []]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        **_entries(name, merged_versions(name, versions, table)),
    }


def _version(gv: str, delegate: Delegate) -> dict[str, Any]:
    version = gv.rpartition("/")[2]
    resources = aggregated_resources(gv, delegate.resources or {})
    fresh = delegate.available and delegate.resources is not None
    return {
        "version": version,
        "resources": resources,
        "freshness": "Current" if fresh else "Stale",
    }


def aggregated(doc: dict[str, Any], table: Table) -> dict[str, Any]:
    """An APIGroupDiscoveryList of /apis with the delegated versions merged in."""
    if not table:
        return doc
    delegated = delegated_groups(table)
    items = []
    seen = set()
    for item in doc.get("items") or []:
        name = (item.get("metadata") or {}).get("name", "")
        seen.add(name)
        if name in delegated:
            own = [_version(f"{name}/{v}", table[f"{name}/{v}"]) for v in delegated[name]]
            rest = [v for v in item.get("versions") or [] if v["version"] not in delegated[name]]
            item = {**item, "versions": [*own, *rest]}
        items.append(item)
    for name in sorted(set(delegated) - seen):
        versions = [_version(f"{name}/{v}", table[f"{name}/{v}"]) for v in delegated[name]]
        items.append({"metadata": {"name": name}, "versions": versions})
    return {**doc, "items": items}


def openapi_index(doc: dict[str, Any], table: Table) -> dict[str, Any]:
    """/openapi/v3 with each delegated group/version's document, which the
    extension server serves at the same path (proxied)."""
    if not table:
        return doc
    paths = dict(doc.get("paths") or {})
    for gv in table:
        if "/" in gv:
            paths[f"apis/{gv}"] = {"serverRelativeURL": f"/openapi/v3/apis/{gv}"}
    return {**doc, "paths": paths}


_merged_v2: dict[tuple[int, tuple[int, ...]], dict[str, Any]] = {}


def openapi_v2(doc: dict[str, Any], table: Table) -> dict[str, Any]:
    """/openapi/v2 with the extension servers' paths and definitions merged
    in (the same document until one of them changes: cached)."""
    remote = [d.openapi_v2 for d in table.values() if d.available and d.openapi_v2]
    if not remote:
        return doc
    key = (id(doc), tuple(id(r) for r in remote))
    merged = _merged_v2.get(key)
    if merged is None:
        paths, definitions = dict(doc.get("paths") or {}), dict(doc.get("definitions") or {})
        for spec in remote:
            paths.update(spec.get("paths") or {})
            definitions.update(spec.get("definitions") or {})
        merged = {**doc, "paths": paths, "definitions": definitions}
        _merged_v2.clear()  # one document at a time
        _merged_v2[key] = merged
    return merged
