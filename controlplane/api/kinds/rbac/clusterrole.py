"""ClusterRole (rbac.authorization.k8s.io/v1, cluster-scoped): a set of
PolicyRules, optionally aggregated from other ClusterRoles. Named by any
path segment; validated as a Role (controlplane/api/rbac.py)."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.rbac.role import POLICY_RULE, validate
from controlplane.api.schema import RBAC, declare

DEFINITION = KindDef(
    KindInfo("ClusterRole", "rbac.authorization.k8s.io/v1", namespaced=False, has_status=False),
    types={
        **POLICY_RULE,
        **declare(
            RBAC,
            """
            ClusterRole [rbac.authorization.k8s.io/v1 ClusterRole]: ClusterRole is a cluster-level
                    set of PolicyRules.
                rules            []PolicyRule  The PolicyRules of this ClusterRole.
                aggregationRule  object        How to build the rules from other ClusterRoles.
            """,
        ),
    },
    validate=validate,
    name_rule="path-segment",
)
