"""ClusterRole aggregation: fill each aggregated ClusterRole's rules.

A ClusterRole with an aggregationRule gets, as its rules, the rules of
every other ClusterRole whose labels match one of its clusterRoleSelectors
(kube-controller-manager's clusterrole-aggregation controller). Any
ClusterRole change re-queues every aggregated role; `sync(name)` computes
the rules from the informer's store (controlplane/api/rbac.py) and writes
them only when they differ. It never touches a role without an
aggregationRule.
"""

from __future__ import annotations

from controlplane.api.rbac import aggregated_rules
from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.controllers.base import Controller, ControllerContext


class ClusterRoleAggregationController(Controller):
    name = "clusterrole-aggregation"
    default_workers = 1

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.roles = self.watch("ClusterRole")
        self.follow(self.roles, self._changed, self._changed)

    def _changed(self, obj: Object) -> None:
        for role in self.roles.store.list():
            if role.get("aggregationRule"):
                self.enqueue(role)

    def sync(self, key: str) -> float | None:
        role = self.roles.store.get(key)
        if role is None:
            return None
        rules = aggregated_rules(role, self.roles.store.list())
        if rules is None or rules == (role.get("rules") or []):
            return None
        try:
            self.client.patch("ClusterRole", key, {"rules": rules})
        except errors.NotFound:
            pass
        return None


def init(ctx: ControllerContext) -> Controller:
    return ClusterRoleAggregationController(ctx)
