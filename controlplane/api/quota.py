"""ResourceQuota's evaluators: what an object uses of a quota, and whether a
quota applies to it. Pure functions shared by the quota admission (the API
server) and the quota controller (status.used), so both count alike.

As Kubernetes' quota evaluators (pkg/quota/v1/evaluator/core):

- every kind counts as `count/<plural>` (`count/<plural>.<group>` outside the
  core group); Pods, Services, ConfigMaps, Secrets, PersistentVolumeClaims,
  ReplicationControllers and ResourceQuotas also by their old names
  (`pods`, `services`, ...);
- a Pod that has not finished uses requests.cpu/memory/ephemeral-storage
  (also spelled cpu, memory, ephemeral-storage), limits.*, and
  `requests.<extended resource>`: the larger of its containers' sum and its
  largest init container, plus its overhead;
- a Service uses `services.nodeports` (one per port of a NodePort or
  LoadBalancer Service) and `services.loadbalancers`;
- a PersistentVolumeClaim uses `requests.storage` and, per class,
  `<class>.storageclass.storage.k8s.io/requests.storage` and
  `.../persistentvolumeclaims`;
- scopes (Terminating, NotTerminating, BestEffort, NotBestEffort,
  PriorityClass through scopeSelector) restrict a quota to the pods they
  match; a scoped quota counts no other kind.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from controlplane.api.kinds.info import KindInfo
from controlplane.api.qos import qos_class
from controlplane.api.quantity import format_quantity, is_binary, parse_quantity

Object = Mapping[str, Any]

# Kinds Kubernetes also counts under an old name.
LEGACY = {
    "Pod": "pods",
    "Service": "services",
    "ConfigMap": "configmaps",
    "Secret": "secrets",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "ReplicationController": "replicationcontrollers",
    "ResourceQuota": "resourcequotas",
}

COMPUTE = ("cpu", "memory", "ephemeral-storage")
STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"

SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
          "CrossNamespacePodAffinity")  # fmt: skip
# What a quota with each scope may limit (Kubernetes' scope validation).
POD_RESOURCES = frozenset(
    {"pods", "count/pods", "cpu", "memory", "ephemeral-storage"}
    | {f"{p}.{r}" for p in ("requests", "limits") for r in COMPUTE}
)


@dataclass
class Usage:
    """Amounts by resource name; `binary`: the names first counted in a
    binary quantity (64Mi), written back in that format."""

    values: dict[str, Fraction] = field(default_factory=dict)
    binary: set[str] = field(default_factory=set)

    def add(self, resource: str, amount: Fraction, binary: bool = False) -> None:
        had = self.values.get(resource)
        if binary and not had:  # a zero takes the added one's format
            self.binary.add(resource)
        self.values[resource] = amount if had is None else had + amount

    def merge(self, other: Usage, sign: int = 1) -> None:
        for resource, amount in other.values.items():
            self.add(resource, sign * amount, resource in other.binary)

    def formatted(self, names: Iterable[str]) -> dict[str, str]:
        """The named resources as quantities (0 for those never counted)."""
        return {
            n: format_quantity(self.values.get(n, Fraction(0)), n in self.binary) for n in names
        }


def count_name(info: KindInfo) -> str:
    return f"count/{info.resource}"


_ONE = Fraction(1)


def usage(info: KindInfo, obj: Object) -> Usage:
    """What `obj` uses of any quota in its namespace."""
    used = Usage()
    if info.kind == "Pod" and not pod_counts(obj):
        return used
    used.values[count_name(info)] = _ONE
    core = info.group == ""
    legacy = LEGACY.get(info.kind) if core else None
    if legacy:
        used.values[legacy] = _ONE
    if not core:
        return used
    if info.kind == "Pod":
        _pod_usage(used, obj)
    elif info.kind == "Service":
        spec = obj.get("spec") or {}
        kind = spec.get("type") or "ClusterIP"
        if kind in ("NodePort", "LoadBalancer"):
            used.add("services.nodeports", Fraction(len(spec.get("ports") or [])))
        if kind == "LoadBalancer":
            used.add("services.loadbalancers", Fraction(1))
    elif info.kind == "PersistentVolumeClaim":
        _claim_usage(used, obj)
    return used


def matches(info: KindInfo, resource: str) -> bool:
    """Whether objects of `info` can count toward `resource` (an evaluator's
    MatchingResources): a quota limiting it applies to them even when one
    uses none of it (a pod without requests and a requests.cpu quota)."""
    if resource == count_name(info):
        return True
    if info.group != "":
        return False
    if resource == LEGACY.get(info.kind):
        return True
    if info.kind == "Pod":
        return resource in POD_RESOURCES or resource.startswith(("requests.", "limits."))
    if info.kind == "Service":
        return resource in ("services.nodeports", "services.loadbalancers")
    if info.kind == "PersistentVolumeClaim":
        return resource == "requests.storage" or STORAGE_CLASS_SUFFIX in resource
    return False


def pod_counts(pod: Object) -> bool:
    """A pod that finished uses nothing (QuotaV1Pod)."""
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def _containers(spec: Object, key: str) -> list[Object]:
    found = spec.get(key)
    return [c for c in found if isinstance(c, Mapping)] if isinstance(found, list) else []


def _quantities(container: Object, which: str) -> dict[str, Any]:
    resources = container.get("resources") or {}
    found = resources.get(which) if isinstance(resources, Mapping) else None
    return dict(found) if isinstance(found, Mapping) else {}


def pod_resources(pod: Object, which: str) -> Usage:
    """A pod's requests or limits: the larger of its containers' sum (with
    its sidecar init containers) and each init container's (with the
    sidecars started before it), plus its overhead."""
    spec = pod.get("spec") or {}
    total = Usage()
    for c in _containers(spec, "containers"):
        for name, value in _quantities(c, which).items():
            total.add(name, parse_quantity(value), is_binary(value))
    sidecars = Usage()
    peaks: dict[str, Fraction] = {}
    for c in _containers(spec, "initContainers"):
        own = _quantities(c, which)
        for name, value in own.items():
            amount = parse_quantity(value)
            if c.get("restartPolicy") == "Always":
                sidecars.add(name, amount, is_binary(value))
            else:
                peak = amount + sidecars.values.get(name, Fraction(0))
                peaks[name] = max(peaks.get(name, Fraction(0)), peak)
                if is_binary(value) and name not in total.values:
                    total.binary.add(name)
    total.merge(sidecars)
    for name, peak in peaks.items():
        if peak > total.values.get(name, Fraction(0)):
            total.values[name] = peak
    for name, value in (spec.get("overhead") or {}).items():
        if name in total.values or which == "requests":
            total.add(name, parse_quantity(value), is_binary(value))
    return total


def _pod_usage(used: Usage, pod: Object) -> None:
    for which in ("requests", "limits"):
        amounts = pod_resources(pod, which)
        for name, amount in amounts.values.items():
            binary = name in amounts.binary
            used.add(f"{which}.{name}", amount, binary)
            if which == "requests" and name in COMPUTE:
                used.add(name, amount, binary)


def _claim_usage(used: Usage, claim: Object) -> None:
    spec = claim.get("spec") or {}
    requests = ((spec.get("resources") or {}).get("requests")) or {}
    storage = requests.get("storage") if isinstance(requests, Mapping) else None
    cls = spec.get("storageClassName")
    if cls:
        used.add(f"{cls}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims", Fraction(1))
    if storage is None:
        return
    try:
        amount = parse_quantity(storage)
    except ValueError:
        return
    used.add("requests.storage", amount, is_binary(storage))
    if cls:
        used.add(f"{cls}{STORAGE_CLASS_SUFFIX}requests.storage", amount, is_binary(storage))


# ---- scopes -------------------------------------------------------------------


def scopes_of(quota: Object) -> list[tuple[str, str, list[str]]]:
    """(scope, operator, values) of spec.scopes (Exists) and spec.scopeSelector."""
    spec = quota.get("spec") or {}
    found: list[tuple[str, str, list[str]]] = [
        (str(s), "Exists", []) for s in spec.get("scopes") or []
    ]
    selector = spec.get("scopeSelector") or {}
    for expr in selector.get("matchExpressions") or []:
        if isinstance(expr, Mapping):
            found.append((str(expr.get("scopeName")), str(expr.get("operator")),
                          [str(v) for v in expr.get("values") or []]))  # fmt: skip
    return found


def _scope_matches(scope: str, operator: str, values: list[str], pod: Object) -> bool:
    spec = pod.get("spec") or {}
    if scope == "Terminating":
        return spec.get("activeDeadlineSeconds") is not None
    if scope == "NotTerminating":
        return spec.get("activeDeadlineSeconds") is None
    if scope == "BestEffort":
        return qos_class(pod) == "BestEffort"
    if scope == "NotBestEffort":
        return qos_class(pod) != "BestEffort"
    if scope == "PriorityClass":
        cls = str(spec.get("priorityClassName") or "")
        if operator == "Exists":
            return bool(cls)
        if operator == "DoesNotExist":
            return not cls
        if operator == "In":
            return cls in values
        if operator == "NotIn":
            return cls not in values
        return False
    if scope == "CrossNamespacePodAffinity":
        return False  # skiff's pods name no other namespaces in their affinity terms
    return False


def applies(quota: Object, info: KindInfo, obj: Object) -> bool:
    """Whether `quota`'s scopes select `obj` (an unscoped quota: everything)."""
    scopes = scopes_of(quota)
    if not scopes:
        return True
    if info.kind != "Pod" or info.group != "":
        return False
    return all(_scope_matches(s, op, vals, obj) for s, op, vals in scopes)


def hard_of(quota: Object, which: str = "status") -> dict[str, Fraction]:
    """The parsed hard limits (status.hard: what the controller has taken in)."""
    part = quota.get(which) or {}
    hard = part.get("hard") if isinstance(part, Mapping) else None
    found: dict[str, Fraction] = {}
    for name, value in (hard or {}).items():
        try:
            found[str(name)] = parse_quantity(value)
        except ValueError:
            continue
    return found


def used_of(quota: Object) -> Usage:
    used = Usage()
    for name, value in ((quota.get("status") or {}).get("used") or {}).items():
        try:
            used.add(str(name), parse_quantity(value), is_binary(value))
        except ValueError:
            continue
    return used


def pretty(values: Mapping[str, Fraction], names: Iterable[str], binary: set[str]) -> str:
    """`a=1,b=2` in name order, as Kubernetes' prettyPrint."""
    return ",".join(
        f"{n}={format_quantity(values.get(n, Fraction(0)), n in binary)}" for n in sorted(names)
    )


def missing_constraints(hard: Iterable[str], pod: Object) -> str:
    """The pod evaluator's Constraints: a quota limiting requests.cpu (or
    cpu, limits.memory ...) needs every container to set it; '' when met.
    Kubernetes' text: `must specify limits.cpu for: a,b; requests.memory for: a`."""
    names = set(hard)
    wanted = []
    for which in ("requests", "limits"):
        for resource in COMPUTE:
            if f"{which}.{resource}" in names or (which == "requests" and resource in names):
                wanted.append((which, resource))
    if not wanted:
        return ""
    spec = pod.get("spec") or {}
    containers = _containers(spec, "containers") + _containers(spec, "initContainers")
    parts = []
    for which, resource in wanted:
        if resource == "ephemeral-storage":
            continue  # Kubernetes does not require ephemeral-storage to be set
        lacking = [str(c.get("name")) for c in containers if resource not in _quantities(c, which)]
        if lacking:
            parts.append(f"{which}.{resource} for: {','.join(lacking)}")
    return "must specify " + "; ".join(parts) if parts else ""
