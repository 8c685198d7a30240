"""A pod's scheduling-relevant facts, parsed once from its Kubernetes dict.

`PodInfo.of(pod)` reads requests, ports, selectors, affinity terms,
tolerations, spread constraints, priority and gang membership into plain
typed values that plugins use without re-walking the JSON. Label selectors and
node selector terms compile into hashable tuples with a `matches()` method.
Pure functions only: this module never touches cluster state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from controlplane.api.qos import QOSClass, qos_class
from controlplane.scheduler import resources
from machinery import rfc3339

Obj = dict[str, Any]

HOSTNAME_LABEL = "kubernetes.io/hostname"
# Gang membership: skiff's label, or Volcano's annotation.
POD_GROUP_LABEL = "scheduling.skiff.dev/pod-group"
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
DEFAULT_SCHEDULER = "default-scheduler"


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: frozenset[str] = frozenset()

    def matches(self, labels: dict[str, str]) -> bool:
        op = self.op
        if op == "In":
            return labels.get(self.key) in self.values
        if op == "NotIn":
            return labels.get(self.key) not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        if op in ("Gt", "Lt"):
            have = labels.get(self.key)
            if have is None or len(self.values) != 1:
                return False
            try:
                a, b = int(have), int(next(iter(self.values)))
            except ValueError:
                return False
            return a > b if op == "Gt" else a < b
        return False


@dataclass(frozen=True)
class Selector:
    """A label selector (requirements ANDed). `nothing` matches no object."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: dict[str, str]) -> bool:
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    @property
    def keys(self) -> frozenset[str]:
        """The label keys this selector looks at."""
        return frozenset(r.key for r in self.requirements)


def label_selector(raw: Obj | None) -> Selector:
    """metav1.LabelSelector: nil selects nothing, {} selects everything."""
    if raw is None:
        return Selector(nothing=True)
    reqs = [
        Requirement(k, "In", frozenset([str(v)])) for k, v in (raw.get("matchLabels") or {}).items()
    ]
    for e in raw.get("matchExpressions") or ():
        reqs.append(
            Requirement(e["key"], e["operator"], frozenset(str(v) for v in e.get("values") or ()))
        )
    return Selector(tuple(sorted(reqs, key=lambda r: (r.key, r.op, sorted(r.values)))))


@dataclass(frozen=True)
class NodeSelectorTerm:
    """One term of a node selector: label expressions and field (metadata.name) expressions."""

    expressions: tuple[Requirement, ...]
    fields: tuple[Requirement, ...] = ()

    def matches(self, labels: dict[str, str], node_name: str) -> bool:
        if not self.expressions and not self.fields:
            return False
        if not all(r.matches(labels) for r in self.expressions):
            return False
        fields = {"metadata.name": node_name}
        return all(r.matches(fields) for r in self.fields)


def _requirements(raw: Any) -> tuple[Requirement, ...]:
    return tuple(
        Requirement(e["key"], e["operator"], frozenset(str(v) for v in e.get("values") or ()))
        for e in raw or ()
    )


def node_selector_term(raw: Obj) -> NodeSelectorTerm:
    return NodeSelectorTerm(
        _requirements(raw.get("matchExpressions")), _requirements(raw.get("matchFields"))
    )


@dataclass(frozen=True)
class AffinityTerm:
    """A pod (anti-)affinity term: pods matching `selector` in `namespaces`, per `topology_key`."""

    selector: Selector
    namespaces: frozenset[str]  # empty with all_namespaces=False never happens
    topology_key: str
    all_namespaces: bool = False

    def matches(self, namespace: str, labels: dict[str, str]) -> bool:
        if not self.all_namespaces and namespace not in self.namespaces:
            return False
        return self.selector.matches(labels)


def affinity_term(raw: Obj, own_namespace: str) -> AffinityTerm:
    namespaces = frozenset(raw.get("namespaces") or ())
    ns_selector = raw.get("namespaceSelector")
    all_ns = (
        ns_selector is not None
        and not ns_selector.get("matchLabels")
        and not ns_selector.get("matchExpressions")
    )
    if not namespaces and not all_ns:
        namespaces = frozenset([own_namespace])
    return AffinityTerm(
        label_selector(raw.get("labelSelector")), namespaces, raw.get("topologyKey", ""), all_ns
    )


@dataclass(frozen=True)
class Toleration:
    key: str
    operator: str  # Equal or Exists
    value: str
    effect: str  # "" means every effect

    def tolerates(self, key: str, value: str, effect: str) -> bool:
        if self.effect and self.effect != effect:
            return False
        if self.key and self.key != key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == value


@dataclass(frozen=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # DoNotSchedule or ScheduleAnyway
    selector: Selector
    min_domains: int = 1


def parse_time(text: str | None) -> float:
    """An RFC 3339 timestamp as epoch seconds; 0 when absent or bad."""
    return rfc3339.parse_time(text) or 0.0


def image_name(image: str) -> str:
    """Normalised as ImageLocality does: a tag defaults to ":latest"."""
    last = image.rsplit("/", 1)[-1]
    if "@" in last or ":" in last:
        return image
    return image + ":latest"


@dataclass
class PodInfo:
    pod: Obj
    key: str
    name: str
    namespace: str
    uid: str
    labels: dict[str, str]
    priority: int
    created: float
    requests: dict[str, int]
    nz_cpu: int
    nz_mem: int
    host_ports: tuple[tuple[str, str, int], ...]
    node_name: str
    scheduler_name: str
    node_selector: dict[str, str]
    required_node_terms: tuple[NodeSelectorTerm, ...] | None
    preferred_node_terms: tuple[tuple[int, NodeSelectorTerm], ...]
    tolerations: tuple[Toleration, ...]
    affinity: tuple[AffinityTerm, ...]
    anti_affinity: tuple[AffinityTerm, ...]
    preferred_affinity: tuple[tuple[int, AffinityTerm], ...]
    preferred_anti_affinity: tuple[tuple[int, AffinityTerm], ...]
    spread: tuple[SpreadConstraint, ...]
    images: tuple[str, ...]
    owner: str
    pod_group: str
    best_effort: bool
    grace_seconds: int
    nominated_node: str
    extra: dict[str, Any] = field(default_factory=dict)

    def with_changes(self, **changes: Any) -> PodInfo:
        """A copy with `changes` (a newer object of the same pod, its node):
        `dataclasses.replace` without its checks, which cost several times
        more and come a few times per pod (each bind and status write)."""
        new = object.__new__(PodInfo)
        new.__dict__.update(self.__dict__, **changes)
        return new

    @classmethod
    def of(cls, pod: Obj, priority_classes: dict[str, int] | None = None) -> PodInfo:
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        ns = meta.get("namespace") or "default"
        name = meta.get("name") or ""
        labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        priority = spec.get("priority")
        if priority is None:
            pcn = spec.get("priorityClassName")
            priority = (priority_classes or {}).get(pcn, 0) if pcn else 0
        requests = resources.pod_requests(pod)
        nz_cpu, nz_mem = resources.non_zero_cpu_memory(requests)
        ports: list[tuple[str, str, int]] = []
        containers = list(spec.get("containers") or ())
        for c in containers:
            for p in c.get("ports") or ():
                if p.get("hostPort"):
                    ports.append(
                        (
                            p.get("hostIP") or "0.0.0.0",
                            p.get("protocol") or "TCP",
                            int(p["hostPort"]),
                        )
                    )
        affinity = spec.get("affinity") or {}
        na = affinity.get("nodeAffinity") or {}
        req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
        required_terms = None
        if req is not None:
            required_terms = tuple(
                node_selector_term(t) for t in req.get("nodeSelectorTerms") or ()
            )
        preferred = tuple(
            (int(p.get("weight", 0)), node_selector_term(p.get("preference") or {}))
            for p in na.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        )
        pa = affinity.get("podAffinity") or {}
        paa = affinity.get("podAntiAffinity") or {}

        def terms(section: Obj) -> tuple[AffinityTerm, ...]:
            return tuple(
                affinity_term(t, ns)
                for t in section.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
            )

        def weighted(section: Obj) -> tuple[tuple[int, AffinityTerm], ...]:
            return tuple(
                (int(t.get("weight", 0)), affinity_term(t.get("podAffinityTerm") or {}, ns))
                for t in section.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
            )

        tolerations = tuple(
            Toleration(
                t.get("key") or "",
                t.get("operator") or "Equal",
                str(t.get("value") or ""),
                t.get("effect") or "",
            )
            for t in spec.get("tolerations") or ()
        )
        spread = tuple(
            SpreadConstraint(
                int(c.get("maxSkew", 1)),
                c.get("topologyKey", ""),
                c.get("whenUnsatisfiable", "DoNotSchedule"),
                label_selector(c.get("labelSelector")),
                int(c.get("minDomains") or 1),
            )
            for c in spec.get("topologySpreadConstraints") or ()
        )
        owner = ""
        for ref in meta.get("ownerReferences") or ():
            if ref.get("controller"):
                owner = ref.get("uid") or f"{ref.get('kind')}/{ref.get('name')}"
        group = labels.get(POD_GROUP_LABEL) or (meta.get("annotations") or {}).get(
            VOLCANO_GROUP_ANNOTATION, ""
        )
        best_effort = qos_class(pod) == QOSClass.BEST_EFFORT
        return cls(
            pod=pod,
            key=f"{ns}/{name}",
            name=name,
            namespace=ns,
            uid=meta.get("uid") or f"{ns}/{name}",
            labels=labels,
            priority=int(priority),
            created=parse_time(meta.get("creationTimestamp")),
            requests=requests,
            nz_cpu=nz_cpu,
            nz_mem=nz_mem,
            host_ports=tuple(ports),
            node_name=spec.get("nodeName") or "",
            scheduler_name=spec.get("schedulerName") or DEFAULT_SCHEDULER,
            node_selector={str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()},
            required_node_terms=required_terms,
            preferred_node_terms=preferred,
            tolerations=tolerations,
            affinity=terms(pa),
            anti_affinity=terms(paa),
            preferred_affinity=weighted(pa),
            preferred_anti_affinity=weighted(paa),
            spread=spread,
            images=tuple(image_name(c["image"]) for c in containers if c.get("image")),
            owner=owner,
            pod_group=f"{ns}/{group}" if group else "",
            best_effort=best_effort,
            grace_seconds=int(spec.get("terminationGracePeriodSeconds", 30)),
            nominated_node=(pod.get("status") or {}).get("nominatedNodeName") or "",
        )
