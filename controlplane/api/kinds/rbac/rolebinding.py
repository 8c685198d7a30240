"""RoleBinding (rbac.authorization.k8s.io/v1): grants a Role or ClusterRole
to subjects within a namespace. Named by any path segment; roleRef is
immutable (controlplane/api/rbac.py)."""

from __future__ import annotations

from typing import Any

from controlplane.api.display import age, name
from controlplane.api.kinds.definition import KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.rbac.role import validate
from controlplane.api.schema import RBAC, Type, declare

SUBJECTS: dict[str, Type] = {
    **declare(
        RBAC,
        """
        Subject: Subject names a user, group or service account a binding grants a role to.
            kind!      string  User, Group or ServiceAccount.
            apiGroup   string  The API group of the subject's kind.
            name!      string  The name of the subject.
            namespace  string  The namespace of a ServiceAccount subject.
        RoleRef: RoleRef names the role a binding grants.
            apiGroup!  string  The API group of the role.
            kind!      string  Role or ClusterRole.
            name!      string  The name of the role.
        """,
    ),
}


def row(obj: dict[str, Any], now: float, wide: bool) -> list[str]:
    """printRoleBinding: ROLE is kind/name; wide adds the subjects by kind
    (service accounts as namespace/name), each joined by ", "."""
    ref = obj.get("roleRef") or {}
    cells = [name(obj), f"{ref.get('kind', '')}/{ref.get('name', '')}", age(obj, now)]
    if wide:
        found: dict[str, list[str]] = {"User": [], "Group": [], "ServiceAccount": []}
        for subject in obj.get("subjects") or []:
            kind_ = str(subject.get("kind", ""))
            who = str(subject.get("name", ""))
            if kind_ == "ServiceAccount":
                who = f"{subject.get('namespace', '')}/{who}"
            if kind_ in found:
                found[kind_].append(who)
        cells += [", ".join(found[k]) for k in ("User", "Group", "ServiceAccount")]
    return cells


PRINTER = Printer(columns(("NAME", "ROLE", "AGE"), ("USERS", "GROUPS", "SERVICEACCOUNTS")), row)

DEFINITION = KindDef(
    KindInfo("RoleBinding", "rbac.authorization.k8s.io/v1", has_status=False),
    types={
        **SUBJECTS,
        **declare(
            RBAC,
            """
            RoleBinding [rbac.authorization.k8s.io/v1 RoleBinding]: RoleBinding grants the
                    permissions of a role to subjects within a namespace.
                subjects  []Subject  Who the role is granted to.
                roleRef!  RoleRef    The Role or ClusterRole granted.
            """,
        ),
    },
    validate=validate,
    name_rule="path-segment",
    printer=PRINTER,
)
