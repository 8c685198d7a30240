"""RoleBinding (rbac.authorization.k8s.io/v1): grants a Role or ClusterRole
to subjects within a namespace. Named by any path segment; roleRef is
immutable (controlplane/api/rbac.py)."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.rbac.role import validate
from controlplane.api.schema import RBAC, Type, kind, struct

SUBJECTS: dict[str, Type] = {
    "Subject": struct(
        RBAC,
        "Subject names a user, group or service account a binding grants a role to.",
        ("kind", "name"),
        kind=("string", "User, Group or ServiceAccount."),
        apiGroup=("string", "The API group of the subject's kind."),
        name=("string", "The name of the subject."),
        namespace=("string", "The namespace of a ServiceAccount subject."),
    ),
    "RoleRef": struct(
        RBAC,
        "RoleRef names the role a binding grants.",
        ("apiGroup", "kind", "name"),
        apiGroup=("string", "The API group of the role."),
        kind=("string", "Role or ClusterRole."),
        name=("string", "The name of the role."),
    ),
}

DEFINITION = KindDef(
    KindInfo(
        "RoleBinding",
        "rbac.authorization.k8s.io/v1",
        "rolebindings",
        "rolebinding",
        (),
        has_status=False,
    ),
    types={
        **SUBJECTS,
        "RoleBinding": kind(
            RBAC,
            "RoleBinding grants the permissions of a role to subjects within a namespace.",
            ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
            ("roleRef",),
            subjects=("[]Subject", "Who the role is granted to."),
            roleRef=("RoleRef", "The Role or ClusterRole granted."),
        ),
    },
    validate=validate,
    name_rule="path-segment",
)
