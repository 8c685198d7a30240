"""ClusterRoleBinding (rbac.authorization.k8s.io/v1, cluster-scoped): grants
a ClusterRole to subjects cluster-wide. Named by any path segment; roleRef
is immutable (controlplane/api/rbac.py)."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.rbac.role import validate
from controlplane.api.kinds.rbac.rolebinding import PRINTER, SUBJECTS
from controlplane.api.schema import RBAC, declare

DEFINITION = KindDef(
    KindInfo(
        "ClusterRoleBinding", "rbac.authorization.k8s.io/v1", namespaced=False, has_status=False
    ),
    types={
        **SUBJECTS,
        **declare(
            RBAC,
            """
            ClusterRoleBinding [rbac.authorization.k8s.io/v1 ClusterRoleBinding]: ClusterRoleBinding
                    grants the permissions of a ClusterRole to subjects cluster-wide.
                subjects  []Subject  Who the role is granted to.
                roleRef!  RoleRef    The ClusterRole granted.
            """,
        ),
    },
    validate=validate,
    name_rule="path-segment",
    printer=PRINTER,
)
