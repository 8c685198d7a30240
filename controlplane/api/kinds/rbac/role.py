"""Role (rbac.authorization.k8s.io/v1): a namespaced set of PolicyRules.

Named by any path segment ("system:node"). Validation is
controlplane/api/rbac.py's (rules with verbs, resources or
nonResourceURLs); the authorizer that reads roles is the API server's.
"""

from __future__ import annotations

from typing import Any

from controlplane.api import rbac
from controlplane.api.checks import Errors
from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo
from controlplane.api.schema import RBAC, Type, declare

Object = dict[str, Any]


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    """rbac.py's rules for the kind the object says (all four RBAC kinds)."""
    e.items.extend(rbac.problems(str(obj.get("kind") or ""), obj, old))


POLICY_RULE: dict[str, Type] = {
    **declare(
        RBAC,
        """
        PolicyRule: PolicyRule holds information that describes a policy rule.
            verbs!           []string  The verbs the rule allows ('*' for all).
            apiGroups        []string  The API groups of the resources ('' is core).
            resources        []string  The resources the rule applies to ('*' for all).
            resourceNames    []string  An optional allow list of object names.
            nonResourceURLs  []string  Non-resource URLs (cluster roles only).
        """,
    ),
}

DEFINITION = KindDef(
    KindInfo("Role", "rbac.authorization.k8s.io/v1", has_status=False),
    types={
        **POLICY_RULE,
        **declare(
            RBAC,
            """
            Role [rbac.authorization.k8s.io/v1 Role]: Role is a namespaced set of PolicyRules.
                rules  []PolicyRule  The PolicyRules of this Role.
            """,
        ),
    },
    validate=validate,
    name_rule="path-segment",
)
