"""The node's CSINode (storage.k8s.io/v1), written as the kubelet writes it.

At registration the kubelet's CSI node-info manager makes sure a CSINode
named after the Node exists, owned by the Node (ownerReferences: v1 Node,
its name and uid, so deleting the Node takes the CSINode with it), with one
`spec.drivers` entry per CSI driver registered on the node. skiff's agent
registers no CSI plugin today (local-path volumes are not CSI), so its
drivers list is empty; `drivers` lets a caller name the drivers it knows.

An existing CSINode is kept: an owner that is not this Node's uid (the Node
was deleted and registered again) is replaced, and the drivers this agent
knows are put in place by name (others are left to whoever wrote them).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from controlplane.client import errors
from controlplane.client.interface import ApiClient, Object

log = logging.getLogger("skiff.agent.csinode")


def _owner(node: Mapping[str, Any]) -> dict[str, str]:
    meta = node.get("metadata") or {}
    return {"apiVersion": "v1", "kind": "Node", "name": str(meta.get("name") or ""),
            "uid": str(meta.get("uid") or "")}  # fmt: skip


def desired(node: Mapping[str, Any], drivers: Sequence[Mapping[str, Any]] = ()) -> Object:
    """The CSINode the kubelet would create for `node`."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": _owner(node)["name"], "ownerReferences": [_owner(node)]},
        "spec": {"drivers": [dict(d) for d in drivers]},
    }


def _merged(
    current: Object, node: Mapping[str, Any], drivers: Sequence[Mapping[str, Any]]
) -> Object | None:
    """`current` with our owner and drivers, or None when nothing changes."""
    meta = current.get("metadata") or {}
    owners = [o for o in meta.get("ownerReferences") or [] if isinstance(o, Mapping)]
    owner = _owner(node)
    ours = [o for o in owners if o.get("kind") == "Node" and o.get("uid") == owner["uid"]]
    spec = current.get("spec") if isinstance(current.get("spec"), Mapping) else {}
    have = [d for d in (spec or {}).get("drivers") or [] if isinstance(d, Mapping)]
    names = {str(d.get("name")) for d in drivers}
    new_drivers = [dict(d) for d in have if str(d.get("name")) not in names]
    new_drivers += [dict(d) for d in drivers]
    if ours and sorted(map(str, new_drivers)) == sorted(map(str, have)):
        return None
    updated = dict(current)
    if not ours:
        others = [dict(o) for o in owners if o.get("kind") != "Node"]
        updated["metadata"] = {**meta, "ownerReferences": [*others, owner]}
    updated["spec"] = {**(spec or {}), "drivers": new_drivers}
    return updated


def ensure(
    api: ApiClient, node: Mapping[str, Any], drivers: Sequence[Mapping[str, Any]] = ()
) -> Object:
    """Create or repair this node's CSINode; returns it as stored."""
    body = desired(node, drivers)
    name = body["metadata"]["name"]
    for _ in range(3):  # a conflicting writer: read again and retry
        try:
            current = api.get("CSINode", name)
        except errors.NotFound:
            try:
                made = api.create("CSINode", body)
                log.info("csinode=%s created", name)
                return made
            except errors.AlreadyExists:
                continue
        update = _merged(current, node, drivers)
        if update is None:
            return current
        try:
            return api.update("CSINode", update)
        except errors.Conflict:
            continue
    raise errors.Conflict(f'CSINode "{name}" kept changing while the agent wrote it')
