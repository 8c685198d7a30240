"""The roles of the control plane's own components, and who each one is.

Kubernetes' bootstrap policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy)
is the reference, cut down to the kinds skiff serves and to what skiff's
components actually call:

- `system:kube-scheduler` (user system:kube-scheduler): reads nodes, pods
  and what its filters look at, binds pods, writes pod status (conditions,
  nominated node), deletes pods it preempts, writes Events and its Lease.
  It reads no Secret or ConfigMap and deletes nothing but pods. Volume
  binding is `system:volume-scheduler` (PVs and PVCs: read, update, patch),
  bound to both schedulers as Kubernetes binds it to kube-scheduler.
- `system:volcano-scheduler`: the rules of the ClusterRole Volcano's helm
  chart installs for its scheduler (`volcano-scheduler`, bound by
  `volcano-scheduler-role` to the ServiceAccount of the scheduler's pod).
  skiff runs the batch scheduler inside the control plane, with no pod and
  no ServiceAccount, so the role is bound to the user
  `system:volcano-scheduler` (the way kube-scheduler is a user), under
  names of skiff's own: Volcano's manifest applied next to skiff replaces
  its own objects, never skiff's.
- `system:kube-controller-manager` (user system:kube-controller-manager):
  skiff runs every controller under this one identity (kube-controller-manager
  without --use-service-account-credentials), so the role is the union of
  what the controllers do. The garbage collector and the namespace controller
  read, change and delete any kind, as their Kubernetes roles allow; creating
  is limited to the kinds controllers make. It cannot create a Role or a
  binding, and changing one is still checked for escalation; only the
  clusterrole-aggregation controller's `escalate` lets it write rules it
  does not hold, and only into the aggregated defaults admin, edit and view
  (Kubernetes grants it on every ClusterRole, which would let it widen its
  own); an aggregated role a user makes gets only rules the manager holds.

Each component's credential is a user token the API server derives at start
(`auth.TokenAuthority.user_token`), written to its kubeconfig in the data
directory by controlplane/main.py. This module only describes policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

READ = ["get", "list", "watch"]
AGGREGATED = ("admin", "edit", "view")  # the aggregated default ClusterRoles
WRITE = ["update", "patch"]


@dataclass(frozen=True)
class ComponentIdentity:
    """A control-plane component: its name for `--disable`, its user, the
    ClusterRole(s) bound to that user and its kubeconfig's file name."""

    component: str
    user: str
    roles: tuple[str, ...]
    kubeconfig: str


SCHEDULER = ComponentIdentity(
    "scheduler",
    "system:kube-scheduler",
    ("system:kube-scheduler", "system:volume-scheduler"),
    "scheduler.conf",
)
BATCH_SCHEDULER = ComponentIdentity(
    "volcano-scheduler",
    "system:volcano-scheduler",
    ("system:volcano-scheduler", "system:volume-scheduler"),
    "volcano-scheduler.conf",
)
CONTROLLER_MANAGER = ComponentIdentity(
    "controllers",
    "system:kube-controller-manager",
    ("system:kube-controller-manager",),
    "controller-manager.conf",
)
COMPONENTS = (SCHEDULER, BATCH_SCHEDULER, CONTROLLER_MANAGER)


def _rule(verbs: list[str], groups: list[str], resources: list[str]) -> dict[str, Any]:
    return {"verbs": verbs, "apiGroups": groups, "resources": resources}


# What both schedulers do to pods, Events and their Lease.
_SCHEDULING = [
    _rule(["create", "patch", "update"], ["", "events.k8s.io"], ["events"]),
    _rule(["create"], ["coordination.k8s.io"], ["leases"]),
    _rule(READ, [""], ["nodes", "pods", "namespaces"]),
    _rule(["delete"], [""], ["pods"]),  # preemption
    _rule(["create"], [""], ["bindings", "pods/binding"]),
    _rule(WRITE, [""], ["pods/status"]),
    _rule(READ, ["scheduling.k8s.io"], ["priorityclasses"]),
    # Delegated authn/authz of its secure port (kube-scheduler's role has them too).
    _rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
    _rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
]


def _lease(name: str) -> dict[str, Any]:
    """Its own leader-election Lease only (kube-scheduler's role names its Lease too)."""
    return {**_rule(["get", "update", "patch"], ["coordination.k8s.io"], ["leases"]),
            "resourceNames": [name]}  # fmt: skip


SCHEDULER_RULES = [
    *_SCHEDULING,
    _lease("skiff-scheduler"),
    _rule(READ, [""], ["services", "replicationcontrollers"]),
    _rule(READ, ["apps"], ["replicasets", "statefulsets"]),
    _rule(READ, ["policy"], ["poddisruptionbudgets"]),
    _rule(READ, ["storage.k8s.io"], ["csinodes", "csidrivers", "csistoragecapacities"]),
    _rule(READ, ["scheduling.volcano.sh"], ["podgroups"]),  # coscheduling
]

VOLUME_SCHEDULER_RULES = [
    _rule([*READ, *WRITE], [""], ["persistentvolumes", "persistentvolumeclaims"]),
    _rule(READ, ["storage.k8s.io"], ["storageclasses"]),
]

BATCH_SCHEDULER_RULES = [
    *_SCHEDULING,
    _lease("volcano"),
    _rule(READ, ["scheduling.volcano.sh"], ["podgroups", "queues"]),
    _rule(WRITE, ["scheduling.volcano.sh"], ["podgroups", "podgroups/status", "queues",
                                              "queues/status"]),
    _rule(READ, ["batch.volcano.sh"], ["jobs"]),
    _rule(READ, [""], ["resourcequotas"]),
]  # fmt: skip

CONTROLLER_MANAGER_RULES = [
    # The garbage collector and the namespace controller: every kind.
    _rule([*READ, *WRITE, "delete", "deletecollection"], ["*"], ["*"]),
    # What controllers create.
    _rule(["create"], [""], ["pods", "events", "endpoints", "serviceaccounts", "configmaps",
                             "secrets", "services", "persistentvolumes",
                             "persistentvolumeclaims"]),
    _rule(["create"], ["events.k8s.io"], ["events"]),
    _rule(["create"], ["discovery.k8s.io"], ["endpointslices"]),
    _rule(["create"], ["apps"], ["replicasets", "controllerrevisions"]),
    # API priority and fairness's bootstrap configuration, put back when deleted.
    _rule(["create"], ["flowcontrol.apiserver.k8s.io"],
          ["flowschemas", "prioritylevelconfigurations"]),
    _rule(["create"], ["batch"], ["jobs"]),
    _rule(["create"], ["coordination.k8s.io"], ["leases"]),
    _rule(["create"], ["scheduling.volcano.sh"], ["podgroups"]),
    _rule(["create"], ["networking.k8s.io"], ["ingressclasses"]),  # the built-in class `skiff`
    _rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
    _rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
    # csrsigning: the built-in signers (system:controller:certificate-controller's rule).
    {**_rule(["sign"], ["certificates.k8s.io"], ["signers"]),
     "resourceNames": ["kubernetes.io/kube-apiserver-client",
                       "kubernetes.io/kube-apiserver-client-kubelet",
                       "kubernetes.io/kubelet-serving"]},
    # csrapproving: kubelet client certificates after a SubjectAccessReview,
    # serving certificates for the Node's own addresses.
    {**_rule(["approve"], ["certificates.k8s.io"], ["signers"]),
     "resourceNames": ["kubernetes.io/kube-apiserver-client-kubelet",
                       "kubernetes.io/kubelet-serving"]},
    # The clusterrole-aggregation controller writes the union of other roles
    # into the aggregated defaults (not into its own role: no way up from here).
    {**_rule(["escalate"], ["rbac.authorization.k8s.io"], ["clusterroles"]),
     "resourceNames": list(AGGREGATED)},
]  # fmt: skip

ROLES: dict[str, list[dict[str, Any]]] = {
    "system:kube-scheduler": SCHEDULER_RULES,
    "system:volume-scheduler": VOLUME_SCHEDULER_RULES,
    "system:volcano-scheduler": BATCH_SCHEDULER_RULES,
    "system:kube-controller-manager": CONTROLLER_MANAGER_RULES,
}


def role_users() -> dict[str, list[str]]:
    """Each component ClusterRole and the users bound to it."""
    users: dict[str, list[str]] = {role: [] for role in ROLES}
    for c in COMPONENTS:
        for role in c.roles:
            users[role].append(c.user)
    return users
