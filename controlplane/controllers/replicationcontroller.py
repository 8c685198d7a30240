"""The replication controller: ReplicationControllers kept at spec.replicas.

Kubernetes runs its ReplicaSet controller for them (an RC converted to a
ReplicaSet, its map selector as matchLabels); here the same class does, with
the owner kind and the selector told apart, so adoption, slow start,
expectations, ranking and status are the ReplicaSet controller's, not a copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.client.selectors import Selector, from_label_selector
from controlplane.controllers import podutil
from controlplane.controllers.base import Controller, ControllerContext
from controlplane.controllers.replicaset import ReplicaSetController


class ReplicationManager(ReplicaSetController):
    name = "replicationcontroller"
    owner_kind = "ReplicationController"

    def selector(self, owner: Mapping[str, Any]) -> Selector:
        """spec.selector is a plain label map: each label must equal."""
        raw = podutil.spec(owner).get("selector")
        labels = dict(raw) if isinstance(raw, Mapping) else {}
        return from_label_selector({"matchLabels": labels} if labels else None)


def init(ctx: ControllerContext) -> Controller:
    return ReplicationManager(ctx)
