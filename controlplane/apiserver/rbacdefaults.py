"""The default ClusterRoles and ClusterRoleBindings, as Kubernetes bootstraps them.

cluster-admin (everything; bound to the group system:masters), the
user-facing admin, edit and view (aggregated from the
system:aggregate-to-{admin,edit,view} roles and from any ClusterRole a user
labels rbac.authorization.k8s.io/aggregate-to-{admin,edit,view}: "true"),
system:basic-user (SelfSubjectAccessReview for everyone authenticated),
system:discovery and system:public-info-viewer (discovery and health
paths), system:auth-delegator (TokenReview, SubjectAccessReview),
system:node (what the node authorizer grants, for reference: nodes are
authorized by the node authorizer, as in Kubernetes), and the roles of
skiff's own control-plane components (rbaccomponents.py), each bound to
that component's user.

`ensure_defaults` creates the missing ones (existing ones are left as an
admin may have changed them), filling aggregated roles once; the
clusterrole-aggregation controller keeps them current afterwards. The
components' roles and bindings alone are reconciled to this version's at
every start (`reconcile_components`), unless annotated autoupdate "false":
a role's rules, a binding's role and its component's user; and the objects
older versions named as Volcano's chart names its own (ClusterRole
`volcano-scheduler`, ClusterRoleBinding `volcano-scheduler-role`) are
removed when they are still skiff's (its bootstrapping label), so that an
upstream Volcano installed beside skiff owns those names alone.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from controlplane.api.rbac import GROUP, aggregated_rules
from controlplane.apiserver import rbaccomponents as components
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import AlreadyExists, ApiError, Conflict, NotFound

READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]
AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"
BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
# What skiff before this version named its batch scheduler's role and binding:
# the names Volcano's helm chart gives its own.
LEGACY = (("ClusterRoleBinding", "volcano-scheduler-role"), ("ClusterRole", "volcano-scheduler"))


def _rule(verbs: list[str], groups: list[str], resources: list[str]) -> dict[str, Any]:
    return {"verbs": verbs, "apiGroups": groups, "resources": resources}


VIEW_RULES = [
    _rule(READ, [""], ["pods", "pods/log", "pods/status", "configmaps", "endpoints",
                       "persistentvolumeclaims", "persistentvolumeclaims/status",
                       "replicationcontrollers", "replicationcontrollers/scale",
                       "replicationcontrollers/status", "serviceaccounts", "services",
                       "services/status", "bindings", "events", "limitranges",
                       "namespaces", "namespaces/status", "resourcequotas",
                       "resourcequotas/status"]),
    _rule(READ, ["apps"], ["controllerrevisions", "daemonsets", "daemonsets/status",
                           "deployments", "deployments/scale", "deployments/status",
                           "replicasets", "replicasets/scale", "replicasets/status",
                           "statefulsets", "statefulsets/scale", "statefulsets/status"]),
    _rule(READ, ["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
    _rule(READ, ["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
    _rule(READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
    _rule(READ, ["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"]),
    _rule(READ, ["discovery.k8s.io"], ["endpointslices"]),
    _rule(READ, ["scheduling.skiff.dev"], ["podgroups", "podgroups/status"]),
]  # fmt: skip

EDIT_RULES = [
    _rule([*READ, *WRITE], [""], ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy",
                                  "secrets", "services/proxy"]),
    _rule(["impersonate"], [""], ["serviceaccounts"]),
    _rule(WRITE, [""], ["pods", "configmaps", "endpoints", "persistentvolumeclaims",
                        "replicationcontrollers", "replicationcontrollers/scale",
                        "serviceaccounts", "services", "services/proxy"]),
    _rule(["create"], [""], ["serviceaccounts/token", "pods/eviction"]),
    _rule(WRITE, ["apps"], ["daemonsets", "deployments", "deployments/rollback",
                            "deployments/scale", "replicasets", "replicasets/scale",
                            "statefulsets", "statefulsets/scale"]),
    _rule(WRITE, ["autoscaling"], ["horizontalpodautoscalers"]),
    _rule(WRITE, ["batch"], ["cronjobs", "jobs"]),
    _rule(WRITE, ["policy"], ["poddisruptionbudgets"]),
    _rule(WRITE, ["networking.k8s.io"], ["ingresses", "networkpolicies"]),
    _rule(WRITE, ["discovery.k8s.io"], ["endpointslices"]),
    _rule(WRITE, ["scheduling.skiff.dev"], ["podgroups"]),
]  # fmt: skip

ADMIN_RULES = [
    _rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
    _rule([*READ, *WRITE], [GROUP], ["rolebindings", "roles"]),
]

DISCOVERY_URLS = ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/readyz",
                  "/version", "/version/", "/openapi", "/openapi/*"]  # fmt: skip
PUBLIC_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
# Kubernetes' system:monitoring: the metrics and health URLs, for the group of that name.
MONITORING_URLS = ["/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz", "/livez/*",
                   "/readyz/*", "/healthz/*"]  # fmt: skip

NODE_RULES = [
    _rule(READ, [""], ["nodes", "services", "endpoints"]),
    _rule(["create", "update", "patch", "delete"], [""], ["nodes", "nodes/status"]),
    _rule(["get"], [""], ["pods", "secrets", "configmaps", "persistentvolumeclaims",
                          "persistentvolumes", "serviceaccounts"]),
    _rule(["list", "watch"], [""], ["pods"]),
    _rule(["create", "delete"], [""], ["pods"]),
    _rule(["update", "patch"], [""], ["pods/status"]),
    _rule(["create", "update", "patch"], ["", "events.k8s.io"], ["events"]),
    _rule(["get", "create", "update", "patch", "delete"], ["coordination.k8s.io"], ["leases"]),
    _rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
    _rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
]  # fmt: skip


# What every agent reads besides the node authorizer's grants: the
# NetworkPolicy enforcer (peers are pods anywhere; k3s grants the same to its
# agents' system:k3s-controller) and the built-in ingress controller.
NETWORK_RULES = [
    _rule(["list", "watch"], [""], ["pods"]),  # never `get` of a pod bound elsewhere
    _rule(READ, [""], ["namespaces", "endpoints", "services"]),
    _rule(READ, ["networking.k8s.io"], ["networkpolicies", "ingresses", "ingressclasses"]),
]


def _cluster_role(name: str, rules: list[dict[str, Any]] | None = None,
                  labels: dict[str, str] | None = None,
                  aggregate_from: str = "") -> dict[str, Any]:  # fmt: skip
    role: dict[str, Any] = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": {**BOOTSTRAP_LABELS, **(labels or {})}},
        "rules": rules or [],
    }
    if aggregate_from:
        role["aggregationRule"] = {
            "clusterRoleSelectors": [{"matchLabels": {AGGREGATE + aggregate_from: "true"}}]
        }
    return role


def _binding(role: str, groups: Sequence[str] = (), users: Sequence[str] = ()) -> dict[str, Any]:
    """The ClusterRoleBinding of ClusterRole `role`, named after it (as
    Kubernetes' bootstrap policy names every default binding)."""
    subjects = [{"apiGroup": GROUP, "kind": "Group", "name": g} for g in groups]
    subjects += [{"apiGroup": GROUP, "kind": "User", "name": u} for u in users]
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": role, "labels": dict(BOOTSTRAP_LABELS)},
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    }


CERTIFICATES = "certificates.k8s.io"
CSR_ROLE = "system:certificates.k8s.io:certificatesigningrequests"


def cluster_roles() -> list[dict[str, Any]]:
    everything = [
        {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
        {"verbs": ["*"], "nonResourceURLs": ["*"]},
    ]
    return [
        _cluster_role("cluster-admin", everything),
        _cluster_role("admin", aggregate_from="admin"),
        _cluster_role("edit", labels={AGGREGATE + "admin": "true"}, aggregate_from="edit"),
        _cluster_role("view", labels={AGGREGATE + "edit": "true"}, aggregate_from="view"),
        _cluster_role("system:aggregate-to-admin", ADMIN_RULES, {AGGREGATE + "admin": "true"}),
        _cluster_role("system:aggregate-to-edit", EDIT_RULES, {AGGREGATE + "edit": "true"}),
        _cluster_role("system:aggregate-to-view", VIEW_RULES, {AGGREGATE + "view": "true"}),
        _cluster_role(
            "system:basic-user",
            [
                _rule(
                    ["create"],
                    ["authorization.k8s.io"],
                    ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                )
            ],
        ),
        _cluster_role("system:discovery", [{"verbs": ["get"], "nonResourceURLs": DISCOVERY_URLS}]),
        _cluster_role(
            "system:public-info-viewer", [{"verbs": ["get"], "nonResourceURLs": PUBLIC_URLS}]
        ),
        _cluster_role(
            "system:monitoring", [{"verbs": ["get"], "nonResourceURLs": MONITORING_URLS}]
        ),
        _cluster_role(
            "system:auth-delegator",
            [
                _rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
                _rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
            ],
        ),
        _cluster_role("system:node", NODE_RULES),
        # Kubelet client certificates (csrapproving): a bootstrapper's first,
        # a node's renewal of its own; and the CSR reads and creates they need.
        _cluster_role(
            "system:node-bootstrapper",
            [
                _rule(
                    ["create", "get", "list", "watch"],
                    [CERTIFICATES],
                    ["certificatesigningrequests"],
                )
            ],
        ),
        _cluster_role(
            f"{CSR_ROLE}:nodeclient",
            [_rule(["create"], [CERTIFICATES], ["certificatesigningrequests/nodeclient"])],
        ),
        _cluster_role(
            f"{CSR_ROLE}:selfnodeclient",
            [_rule(["create"], [CERTIFICATES], ["certificatesigningrequests/selfnodeclient"])],
        ),
        _cluster_role("system:skiff-network", NETWORK_RULES),
        *(_cluster_role(name, rules) for name, rules in components.ROLES.items()),
    ]


def cluster_role_bindings() -> list[dict[str, Any]]:
    return [
        _binding("cluster-admin", groups=["system:masters"]),
        _binding("system:basic-user", groups=["system:authenticated"]),
        _binding("system:skiff-network", groups=["system:nodes"]),
        _binding("system:node-bootstrapper", groups=["system:bootstrappers", "system:nodes"]),
        _binding(f"{CSR_ROLE}:nodeclient", groups=["system:bootstrappers"]),
        _binding(f"{CSR_ROLE}:selfnodeclient", groups=["system:nodes"]),
        _binding("system:discovery", groups=["system:authenticated"]),
        _binding("system:monitoring", groups=["system:monitoring"]),
        _binding(
            "system:public-info-viewer", groups=["system:authenticated", "system:unauthenticated"]
        ),
        *(_binding(role, users=users) for role, users in components.role_users().items()),
    ]


def fill_aggregated(roles: list[dict[str, Any]]) -> None:
    """Give every aggregated role its rules, chains included (edit into admin)."""
    for _ in range(len(roles)):
        changed = False
        for role in roles:
            rules = aggregated_rules(role, roles)
            if rules is not None and rules != role["rules"]:
                role["rules"] = rules
                changed = True
        if not changed:
            return


def ensure_defaults(registry: Registry) -> None:
    """Create the default ClusterRoles and ClusterRoleBindings that are missing
    (in one batch: one durable commit, not one per object)."""
    roles = cluster_roles()
    fill_aggregated(roles)
    items: list[tuple[str, dict[str, Any], str | None]] = [("ClusterRole", r, None) for r in roles]
    items += [("ClusterRoleBinding", b, None) for b in cluster_role_bindings()]
    for outcome in registry.create_many(items):
        if isinstance(outcome, ApiError) and not isinstance(outcome, AlreadyExists):
            raise outcome
    reconcile_components(registry)


AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"


def reconcile_components(registry: Registry) -> None:
    """Bring the components' ClusterRoles and bindings to what this version's
    components need (an older data dir has older rules: the scheduler's once
    read every core kind), as Kubernetes reconciles its bootstrap roles at
    start; a role or binding annotated `rbac.authorization.kubernetes.io/autoupdate:
    "false"` is left as its admin wrote it."""
    for name, rules in components.ROLES.items():
        _reconcile(registry, "ClusterRole", name, functools.partial(_set, key="rules", value=rules))
    for binding in cluster_role_bindings():
        name = binding["metadata"]["name"]
        if name in components.ROLES:
            _reconcile(registry, "ClusterRoleBinding", name, functools.partial(_bind, want=binding))
    for kind, name in LEGACY:
        try:
            stored = registry.get_object(kind, name)
        except NotFound:
            continue
        labels = (stored.get("metadata") or {}).get("labels") or {}
        if all(labels.get(k) == v for k, v in BOOTSTRAP_LABELS.items()):
            try:
                registry.delete(kind, name)
            except NotFound:
                pass


def _set(obj: dict[str, Any], key: str, value: Any) -> bool:
    changed: bool = obj.get(key) != value
    obj[key] = value
    return changed


def _bind(stored: dict[str, Any], want: dict[str, Any]) -> bool:
    """The binding's role and its component's users (others' subjects kept)."""
    changed = _set(stored, "roleRef", want["roleRef"])
    subjects = list(stored.get("subjects") or [])
    for subject in want["subjects"]:
        if subject not in subjects:
            subjects.append(subject)
            changed = True
    stored["subjects"] = subjects
    return changed


def _reconcile(
    registry: Registry, kind: str, name: str, fix: Callable[[dict[str, Any]], bool]
) -> None:
    try:
        stored = registry.get_object(kind, name)
    except NotFound:
        return
    annotations = (stored.get("metadata") or {}).get("annotations") or {}
    if annotations.get(AUTOUPDATE) == "false" or not fix(stored):
        return
    try:
        registry.update(kind, stored)
    except Conflict:
        pass  # another control plane on the same etcd reconciled it meanwhile
