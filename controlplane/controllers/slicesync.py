"""What the EndpointSlice controller and its mirroring twin share: the plan
that turns the endpoints a Service (or a custom Endpoints) should have into
the creates, updates and deletes of its EndpointSlices.

Kubernetes' reconciler keeps an endpoint in the slice it is already in
(so a change to one pod rewrites one slice, not every slice): per address
type and port set, the endpoints still wanted stay where they are, the
new ones fill the slices with room and then new slices of at most
`max_per_slice`; slices left empty are deleted, and so are slices of port
sets or address types no longer wanted. A Service with no endpoint at all
keeps one placeholder slice (no endpoints, no ports). Pure functions: the
controllers read their informers and write through the API.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controlplane.controllers import podutil

Object = dict[str, Any]

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
API_VERSION = "discovery.k8s.io/v1"

# (addressType, ports as a hashable tuple)
GroupKey = tuple[str, tuple[tuple[tuple[str, Any], ...], ...]]


def ports_key(ports: Iterable[Mapping[str, Any]] | None) -> tuple[tuple[tuple[str, Any], ...], ...]:
    return tuple(tuple(sorted(p.items())) for p in ports or [])


def group_key(slice_: Mapping[str, Any]) -> GroupKey:
    return str(slice_.get("addressType") or ""), ports_key(slice_.get("ports"))


def endpoint_id(endpoint: Mapping[str, Any]) -> str:
    """What makes two endpoints the same one: the pod (targetRef) or the address."""
    ref = endpoint.get("targetRef") or {}
    if ref.get("uid"):
        return f"uid:{ref['uid']}"
    if ref.get("name"):
        return f"ref:{ref.get('namespace', '')}/{ref.get('kind', '')}/{ref['name']}"
    return "addr:" + ",".join(str(a) for a in endpoint.get("addresses") or [])


@dataclass
class Plan:
    create: list[Object] = field(default_factory=list)
    update: list[Object] = field(default_factory=list)
    delete: list[Object] = field(default_factory=list)


@dataclass(frozen=True)
class Owner:
    """Who a set of slices belongs to: their labels, owner and name prefix."""

    namespace: str
    prefix: str  # generateName
    labels: Mapping[str, str]
    owner_ref: Mapping[str, Any]
    annotations: Mapping[str, str] = field(default_factory=dict)


def _ports_list(key: GroupKey) -> list[Object]:
    return [dict(items) for items in key[1]]


def _new_slice(owner: Owner, key: GroupKey, endpoints: list[Object]) -> Object:
    meta: Object = {
        "generateName": owner.prefix,
        "namespace": owner.namespace,
        "labels": dict(owner.labels),
        "ownerReferences": [dict(owner.owner_ref)],
    }
    if owner.annotations:
        meta["annotations"] = dict(owner.annotations)
    return {
        "apiVersion": API_VERSION,
        "kind": "EndpointSlice",
        "metadata": meta,
        "addressType": key[0],
        "endpoints": endpoints,
        "ports": _ports_list(key),
    }


def _changed(current: Mapping[str, Any], owner: Owner, endpoints: list[Object]) -> Object | None:
    """The slice rewritten to hold `endpoints` with the owner's metadata, or
    None when it already does."""
    labels = dict(podutil.labels_of(current))
    refs = list(podutil.meta(current).get("ownerReferences") or [])
    annotations = dict(podutil.annotations_of(current))
    if (
        (current.get("endpoints") or []) == endpoints
        and labels == dict(owner.labels)
        and refs == [dict(owner.owner_ref)]
        and all(annotations.get(k) == v for k, v in owner.annotations.items())
    ):
        return None
    body = copy.deepcopy(dict(current))
    body["endpoints"] = endpoints
    body["metadata"]["labels"] = dict(owner.labels)
    body["metadata"]["ownerReferences"] = [dict(owner.owner_ref)]
    if owner.annotations:
        body["metadata"]["annotations"] = {**annotations, **owner.annotations}
    return body


def plan(
    owner: Owner,
    existing: Sequence[Mapping[str, Any]],
    desired: Mapping[GroupKey, Sequence[Object]],
    max_per_slice: int,
    placeholder: str = "IPv4",
) -> Plan:
    """The writes that make `existing` (this owner's slices) hold `desired`
    (the endpoints per address type and port set); `placeholder`: the
    address type of the empty slice kept when nothing is desired ("" for none)."""
    out = Plan()
    by_group: dict[GroupKey, list[Mapping[str, Any]]] = {}
    for s in sorted(existing, key=podutil.name_of):
        by_group.setdefault(group_key(s), []).append(s)
    wanted = {k: list(v) for k, v in desired.items() if v}
    if not wanted:
        key: GroupKey = (placeholder, ())
        keep = next(
            (s for s in by_group.get(key, []) if not s.get("endpoints")), None
        ) if placeholder else None  # fmt: skip
        for s in existing:
            if s is not keep:
                out.delete.append(dict(s))
        if placeholder and keep is None:
            out.create.append(_new_slice(owner, key, []))
        elif keep is not None:
            changed = _changed(keep, owner, [])
            if changed is not None:
                out.update.append(changed)
        return out
    for key, slices in by_group.items():
        if key not in wanted:
            out.delete.extend(dict(s) for s in slices)
    for key, endpoints in wanted.items():
        by_id = {endpoint_id(ep): ep for ep in endpoints}
        placed: set[str] = set()
        contents: list[tuple[Mapping[str, Any], list[Object]]] = []
        for s in by_group.get(key, []):
            kept: list[Object] = []
            for ep in s.get("endpoints") or []:
                ident = endpoint_id(ep)
                if ident in by_id and ident not in placed and len(kept) < max_per_slice:
                    kept.append(by_id[ident])
                    placed.add(ident)
            contents.append((s, kept))
        rest = [ep for ident, ep in by_id.items() if ident not in placed]
        for s, kept in contents:
            room = max_per_slice - len(kept)
            if room > 0 and rest:
                kept.extend(rest[:room])
                rest = rest[room:]
            if not kept:
                out.delete.append(dict(s))
                continue
            changed = _changed(s, owner, kept)
            if changed is not None:
                out.update.append(changed)
        for start in range(0, len(rest), max_per_slice):
            out.create.append(_new_slice(owner, key, rest[start : start + max_per_slice]))
    return out
