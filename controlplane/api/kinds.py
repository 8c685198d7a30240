"""The table of every kind the control plane serves, and name lookup.

One row per kind: its Kind name, apiVersion (group/version spelled as
Kubernetes spells it), plural, singular, short names, whether it is
namespaced, and which subresources (status, scale) it has. `lookup()` turns
whatever a user typed (kind, plural, singular or short name, any case,
optionally `plural.group`) into a row, or raises UnknownKind listing what is
supported. This module is pure data: it must never import the server, the
storage or the client transport, so skiffctl can use it freely.

A Kind name is not unique across groups (batch/v1 Job and Volcano's
batch.volcano.sh Job; CustomResourceDefinitions bring any name). Every row
has a `key`: the name the registry, the gRPC API and the clients use for it.
It is the Kind name for the built-in kinds (so nothing stored or sent
changes), and `Kind.group` for a kind whose name another group already owns
(`qualified=True`, e.g. "Job.batch.volcano.sh"), which is also how kubectl
spells it. Kinds may be added and removed at run time (`register`,
`unregister`: CRDs); lookups always see the current table.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


class UnknownKind(LookupError):
    """A name that is no supported kind. `str()` lists the supported kinds."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"unknown kind {name!r}; supported kinds: {', '.join(supported_kinds())}")


@dataclass(frozen=True)
class KindInfo:
    kind: str
    api_version: str  # "v1", "apps/v1", "scheduling.skiff.dev/v1alpha1"
    plural: str
    singular: str
    short_names: tuple[str, ...] = ()
    namespaced: bool = True
    has_status: bool = True
    has_scale: bool = False
    # apiVersions also accepted in manifests (e.g. Event in v1 and events.k8s.io/v1).
    also_api_versions: tuple[str, ...] = ()
    # True when another group's kind has the same Kind name: the key is then
    # `Kind.group` and stored objects live under `plural.group`.
    qualified: bool = False
    categories: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """The name the registry, the gRPC API and clients use for this kind."""
        return f"{self.kind}.{self.group}" if self.qualified else self.kind

    @property
    def storage_name(self) -> str:
        """The first segment of this kind's storage keys."""
        return f"{self.plural}.{self.group}" if self.qualified else self.plural

    # Never stored: a create is answered at once (SubjectAccessReview, TokenReview).
    create_only: bool = False

    @property
    def group(self) -> str:
        """The API group ("" for the core group)."""
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def resource(self) -> str:
        """`plural` or `plural.group`, as kubectl prints resource types."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def accepts_api_version(self, api_version: str) -> bool:
        return api_version == self.api_version or api_version in self.also_api_versions


KINDS: tuple[KindInfo, ...] = (
    KindInfo("Namespace", "v1", "namespaces", "namespace", ("ns",), namespaced=False),
    KindInfo("Node", "v1", "nodes", "node", ("no",), namespaced=False),
    KindInfo("Pod", "v1", "pods", "pod", ("po",)),
    KindInfo("Service", "v1", "services", "service", ("svc",)),
    KindInfo("Endpoints", "v1", "endpoints", "endpoints", ("ep",), has_status=False),
    KindInfo("ConfigMap", "v1", "configmaps", "configmap", ("cm",), has_status=False),
    KindInfo("Secret", "v1", "secrets", "secret", (), has_status=False),
    KindInfo(
        "Event",
        "v1",
        "events",
        "event",
        ("ev",),
        has_status=False,
        also_api_versions=("events.k8s.io/v1",),
    ),
    KindInfo("ReplicaSet", "apps/v1", "replicasets", "replicaset", ("rs",), has_scale=True),
    KindInfo("Deployment", "apps/v1", "deployments", "deployment", ("deploy",), has_scale=True),
    KindInfo("StatefulSet", "apps/v1", "statefulsets", "statefulset", ("sts",), has_scale=True),
    KindInfo("DaemonSet", "apps/v1", "daemonsets", "daemonset", ("ds",)),
    KindInfo("Job", "batch/v1", "jobs", "job", ()),
    KindInfo("CronJob", "batch/v1", "cronjobs", "cronjob", ("cj",)),
    KindInfo(
        "HorizontalPodAutoscaler",
        "autoscaling/v2",
        "horizontalpodautoscalers",
        "horizontalpodautoscaler",
        ("hpa",),
    ),
    KindInfo("Lease", "coordination.k8s.io/v1", "leases", "lease", (), has_status=False),
    KindInfo(
        "PriorityClass",
        "scheduling.k8s.io/v1",
        "priorityclasses",
        "priorityclass",
        ("pc",),
        namespaced=False,
        has_status=False,
    ),
    # Volcano's kinds (batch scheduling). PodGroup is Volcano's, which also
    # serves the default scheduler's Coscheduling; skiff's earlier
    # scheduling.skiff.dev/v1alpha1 manifests are still accepted.
    KindInfo(
        "CustomResourceDefinition",
        "apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        "customresourcedefinition",
        ("crd", "crds"),
        namespaced=False,
        categories=("api-extensions",),
    ),
    KindInfo(
        "PersistentVolume",
        "v1",
        "persistentvolumes",
        "persistentvolume",
        ("pv",),
        namespaced=False,
    ),
    KindInfo(
        "PersistentVolumeClaim",
        "v1",
        "persistentvolumeclaims",
        "persistentvolumeclaim",
        ("pvc",),
    ),
    KindInfo(
        "StorageClass",
        "storage.k8s.io/v1",
        "storageclasses",
        "storageclass",
        ("sc",),
        namespaced=False,
        has_status=False,
    ),
    # networking.k8s.io/v1 (issue 31): enforced by the agents, served by the
    # built-in ingress controller.
    KindInfo(
        "NetworkPolicy",
        "networking.k8s.io/v1",
        "networkpolicies",
        "networkpolicy",
        ("netpol",),
        has_status=False,
    ),
    KindInfo("Ingress", "networking.k8s.io/v1", "ingresses", "ingress", ("ing",)),
    KindInfo(
        "IngressClass",
        "networking.k8s.io/v1",
        "ingressclasses",
        "ingressclass",
        (),
        namespaced=False,
        has_status=False,
    ),
    KindInfo(
        "PodGroup",
        "scheduling.volcano.sh/v1beta1",
        "podgroups",
        "podgroup",
        ("pg", "podgroup-v1beta1"),
        also_api_versions=("scheduling.skiff.dev/v1alpha1",),
    ),
    KindInfo(
        "Queue",
        "scheduling.volcano.sh/v1beta1",
        "queues",
        "queue",
        ("q", "queue-v1beta1"),
        namespaced=False,
    ),
    KindInfo(
        "Job",
        "batch.volcano.sh/v1alpha1",
        "jobs",
        "job",
        ("vcjob", "vj"),
        qualified=True,
    ),
    KindInfo("Command", "bus.volcano.sh/v1alpha1", "commands", "command", (), has_status=False),
    KindInfo(
        "ServiceAccount", "v1", "serviceaccounts", "serviceaccount", ("sa",), has_status=False
    ),
    KindInfo("Role", "rbac.authorization.k8s.io/v1", "roles", "role", (), has_status=False),
    KindInfo(
        "ClusterRole",
        "rbac.authorization.k8s.io/v1",
        "clusterroles",
        "clusterrole",
        (),
        namespaced=False,
        has_status=False,
    ),
    KindInfo(
        "RoleBinding",
        "rbac.authorization.k8s.io/v1",
        "rolebindings",
        "rolebinding",
        (),
        has_status=False,
    ),
    KindInfo(
        "ClusterRoleBinding",
        "rbac.authorization.k8s.io/v1",
        "clusterrolebindings",
        "clusterrolebinding",
        (),
        namespaced=False,
        has_status=False,
    ),
    KindInfo(
        "SelfSubjectAccessReview",
        "authorization.k8s.io/v1",
        "selfsubjectaccessreviews",
        "selfsubjectaccessreview",
        (),
        namespaced=False,
        create_only=True,
    ),
    KindInfo(
        "SubjectAccessReview",
        "authorization.k8s.io/v1",
        "subjectaccessreviews",
        "subjectaccessreview",
        (),
        namespaced=False,
        create_only=True,
    ),
    KindInfo(
        "TokenRequest",
        "authentication.k8s.io/v1",
        "tokenrequests",
        "tokenrequest",
        (),
        create_only=True,
    ),
    KindInfo(
        "TokenReview",
        "authentication.k8s.io/v1",
        "tokenreviews",
        "tokenreview",
        (),
        namespaced=False,
        create_only=True,
    ),
)


class _Table:
    """The current rows and their indexes, swapped whole on every change so a
    reader never sees a half-built index."""

    def __init__(self, rows: tuple[KindInfo, ...]) -> None:
        self.rows = rows
        self.by_key: dict[str, KindInfo] = {k.key: k for k in rows}
        self.by_name: dict[str, KindInfo] = {}
        for info in rows:
            keys = [info.key, info.kind, info.plural, info.singular, *info.short_names]
            if info.group:
                keys += [f"{info.plural}.{info.group}", f"{info.singular}.{info.group}"]
                keys += [f"{info.kind}.{info.group}"]
            for key in keys:
                self.by_name.setdefault(key.lower(), info)


_table = _Table(KINDS)
_lock = threading.Lock()


def all_kinds() -> tuple[KindInfo, ...]:
    """The built-in rows followed by those registered at run time."""
    return _table.rows


def register(info: KindInfo) -> None:
    """Add (or replace, by key) a kind served from now on. A built-in kind
    cannot be replaced; a kind whose Kind name a built-in owns must be
    `qualified`."""
    global _table
    with _lock:
        if (
            not info.qualified
            and info.kind in {k.kind for k in KINDS}
            and info.group != next(k.group for k in KINDS if k.kind == info.kind)
        ):
            raise ValueError(
                f"kind {info.kind} of {info.group} must be qualified: "
                f"{info.kind} is a built-in kind"
            )
        if info.key in {k.key for k in KINDS}:
            raise ValueError(f"kind {info.key} is built in and cannot be replaced")
        rows = (*(k for k in _table.rows if k.key != info.key), info)
        _table = _Table(rows)


def unregister(key: str) -> None:
    """Stop serving a kind added with `register` (no-op for an unknown key)."""
    global _table
    with _lock:
        if key in {k.key for k in KINDS}:
            raise ValueError(f"kind {key} is built in and cannot be removed")
        _table = _Table(tuple(k for k in _table.rows if k.key != key))


def lookup(name: str) -> KindInfo:
    """The kind named by `name`: its key, Kind, plural, singular or short
    name, any case.

    Also accepts `plural.group` ("deployments.apps") and `Kind.group`.
    Raises UnknownKind with the list of supported kinds otherwise.
    """
    info = _table.by_name.get(name.strip().lower())
    if info is None:
        raise UnknownKind(name)
    return info


def by_kind(kind: str) -> KindInfo:
    """Exact key lookup ("Pod", "Job.batch.volcano.sh"), as API calls carry it."""
    info = _table.by_key.get(kind)
    if info is None:
        return lookup(kind)
    return info


def for_object(api_version: str, kind: str) -> KindInfo:
    """The kind of an object that says `apiVersion: api_version` and `kind: kind`
    (a manifest): the row of that Kind name that serves that apiVersion, else
    the row the Kind name alone names."""
    for info in _table.rows:
        if info.kind == kind and info.accepts_api_version(api_version):
            return info
    return by_kind(kind)


def supported_kinds() -> list[str]:
    return [k.key for k in _table.rows]
