"""The table of every kind the control plane serves, and name lookup.

One row per kind: its Kind name, apiVersion (group/version spelled as
Kubernetes spells it), plural, singular, short names, whether it is
namespaced, and which subresources (status, scale) it has. `lookup()` turns
whatever a user typed (kind, plural, singular or short name, any case,
optionally `plural.group`) into a row, or raises UnknownKind listing what is
supported. This module is pure data: it must never import the server, the
storage or the client transport, so skiffctl can use it freely.
"""

from __future__ import annotations

from dataclasses import dataclass


class UnknownKind(LookupError):
    """A name that is no supported kind. `str()` lists the supported kinds."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(
            f"unknown kind {name!r}; supported kinds: {', '.join(k.kind for k in KINDS)}"
        )


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
    KindInfo(
        "PodGroup",
        "scheduling.skiff.dev/v1alpha1",
        "podgroups",
        "podgroup",
        ("pg",),
    ),
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

_BY_KIND: dict[str, KindInfo] = {k.kind: k for k in KINDS}


def _index() -> dict[str, KindInfo]:
    names: dict[str, KindInfo] = {}
    for info in KINDS:
        keys = [info.kind, info.plural, info.singular, *info.short_names]
        if info.group:
            keys += [f"{info.plural}.{info.group}", f"{info.singular}.{info.group}"]
            keys += [f"{info.kind}.{info.group}"]
        for key in keys:
            names.setdefault(key.lower(), info)
    return names


_BY_NAME = _index()


def lookup(name: str) -> KindInfo:
    """The kind named by `name`: Kind, plural, singular or short name, any case.

    Also accepts `plural.group` ("deployments.apps"). Raises UnknownKind with
    the list of supported kinds otherwise.
    """
    info = _BY_NAME.get(name.strip().lower())
    if info is None:
        raise UnknownKind(name)
    return info


def by_kind(kind: str) -> KindInfo:
    """Exact Kind name lookup ("Pod"), as objects and API calls carry it."""
    info = _BY_KIND.get(kind)
    if info is None:
        return lookup(kind)
    return info


def supported_kinds() -> list[str]:
    return [k.kind for k in KINDS]
