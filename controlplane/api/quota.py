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
  `requests.<extended resource>`: its containers added up as Kubernetes'
  PodRequests/PodLimits add them (machinery/podresources.py: sidecars and
  init containers included), plus its overhead;
- a Service uses `services.nodeports` (one per port of a NodePort or
  LoadBalancer Service) and `services.loadbalancers`;
- a PersistentVolumeClaim uses `requests.storage` and, per class,
  `<class>.storageclass.storage.k8s.io/requests.storage` and
  `.../persistentvolumeclaims`;
- scopes (Terminating, NotTerminating, BestEffort, NotBestEffort,
  PriorityClass through scopeSelector) restrict a quota to the pods they
  match; a scoped quota counts no other kind.

Amounts are ints of nano units (quantity.parse_nanos): Kubernetes rounds
every quantity to 1n, so integer sums are exact where it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from controlplane.api.kinds.info import KindInfo
from controlplane.api.qos import qos_class
from controlplane.api.quantity import format_nanos, is_binary, parse_nanos
from machinery.podresources import pod_total

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
    """Amounts by resource name, in nano units (quantity.parse_nanos: exact
    to Kubernetes' precision, integer arithmetic); `binary`: the names first
    counted in a binary quantity (64Mi), written back in that format."""

    values: dict[str, int] = field(default_factory=dict)
    binary: set[str] = field(default_factory=set)

    def add(self, resource: str, amount: int, binary: bool = False) -> None:
        had = self.values.get(resource)
        if binary and not had:  # a zero takes the added one's format
            self.binary.add(resource)
        self.values[resource] = amount if had is None else had + amount

    def merge(self, other: Usage, sign: int = 1) -> None:
        for resource, amount in other.values.items():
            self.add(resource, sign * amount, resource in other.binary)

    def formatted(self, names: Iterable[str]) -> dict[str, str]:
        """The named resources as quantities (0 for those never counted)."""
        return {n: format_nanos(self.values.get(n, 0), n in self.binary) for n in names}


def count_name(info: KindInfo) -> str:
    return f"count/{info.resource}"


@lru_cache(maxsize=1024)
def _counted(info: KindInfo) -> tuple[str, str | None, bool]:
    """(count/<resource>, the kind's old name or None, whether in the core group)."""
    core = info.group == ""
    return count_name(info), LEGACY.get(info.kind) if core else None, core


_ONE = parse_nanos(1)


def usage(info: KindInfo, obj: Object) -> Usage:
    """What `obj` uses of any quota in its namespace."""
    used = Usage()
    if info.kind == "Pod" and not pod_counts(obj):
        return used
    count, legacy, core = _counted(info)
    used.values[count] = _ONE
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
            used.add("services.nodeports", parse_nanos(len(spec.get("ports") or [])))
        if kind == "LoadBalancer":
            used.add("services.loadbalancers", _ONE)
    elif info.kind == "PersistentVolumeClaim":
        _claim_usage(used, obj)
    return used


def matches(info: KindInfo, resource: str) -> bool:
    """Whether objects of `info` can count toward `resource` (an evaluator's
    MatchingResources): a quota limiting it applies to them even when one
    uses none of it (a pod without requests and a requests.cpu quota)."""
    count, legacy, core = _counted(info)
    if resource == count:
        return True
    if not core:
        return False
    if resource == legacy:
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


_NONE: Mapping[str, Any] = {}


def _containers(spec: Object, key: str) -> list[Object]:
    found = spec.get(key)
    return [c for c in found if isinstance(c, Mapping)] if isinstance(found, list) else []


def _quantities(container: Object, which: str) -> Mapping[str, Any]:
    """A container's requests or limits (shared: read only)."""
    resources = container.get("resources")
    if not resources or not isinstance(resources, Mapping):
        return _NONE
    found = resources.get(which)
    return found if found and isinstance(found, Mapping) else _NONE


def pod_usage(pod: Object) -> Usage:
    """A pod's requests and limits (`requests.<resource>`, `limits.<resource>`),
    as Kubernetes' PodRequests and PodLimits add its containers up
    (machinery/podresources.py), plus its overhead: all of it to requests,
    to limits only where a container set one. A resource is written in
    binary when the first container naming it (containers, then init
    containers) wrote it so."""
    spec = pod.get("spec") or {}
    total = Usage()
    binary = total.binary
    seen: set[str] = set()

    def amounts(container: Object) -> dict[str, int]:
        found: dict[str, int] = {}
        resources = container.get("resources")
        if not resources or not isinstance(resources, dict):
            return found
        for which in ("requests", "limits"):
            values = resources.get(which)
            if not values or not isinstance(values, dict):
                continue
            for name, value in values.items():
                key = f"{which}.{name}"
                found[key] = parse_nanos(value)
                if key not in seen:  # the first to name it sets its format
                    seen.add(key)
                    if is_binary(value):
                        binary.add(key)
        return found

    total.values = pod_total(spec, amounts, {})
    for name, value in (spec.get("overhead") or {}).items():
        amount, in_binary = parse_nanos(value), is_binary(value)
        total.add(f"requests.{name}", amount, in_binary)
        if f"limits.{name}" in total.values:
            total.add(f"limits.{name}", amount, in_binary)
    return total


def pod_resources(pod: Object, which: str) -> Usage:
    """A pod's requests or limits (`which`) by resource name (pod_usage)."""
    both = pod_usage(pod)
    prefix = f"{which}."
    found = Usage()
    for key, amount in both.values.items():
        if key.startswith(prefix):
            found.values[key[len(prefix) :]] = amount
            if key in both.binary:
                found.binary.add(key[len(prefix) :])
    return found


def _pod_usage(used: Usage, pod: Object) -> None:
    amounts = pod_usage(pod)
    used.values.update(amounts.values)  # (used holds only the counts: no name in common)
    used.binary |= amounts.binary
    for name in COMPUTE:  # requests.cpu is also spelled cpu
        key = f"requests.{name}"
        if key in amounts.values:
            used.values[name] = amounts.values[key]
            if key in amounts.binary:
                used.binary.add(name)


def _claim_usage(used: Usage, claim: Object) -> None:
    spec = claim.get("spec") or {}
    requests = ((spec.get("resources") or {}).get("requests")) or {}
    storage = requests.get("storage") if isinstance(requests, Mapping) else None
    cls = spec.get("storageClassName")
    if cls:
        used.add(f"{cls}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims", _ONE)
    if storage is None:
        return
    try:
        amount = parse_nanos(storage)
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
    return selects(scopes_of(quota), info, obj)


def selects(scopes: list[tuple[str, str, list[str]]], info: KindInfo, obj: Object) -> bool:
    """Whether a quota with `scopes` (scopes_of) selects `obj`."""
    if not scopes:
        return True
    if info.kind != "Pod" or not _counted(info)[2]:
        return False
    return all(_scope_matches(s, op, vals, obj) for s, op, vals in scopes)


def hard_of(quota: Object, which: str = "status") -> dict[str, int]:
    """The parsed hard limits (status.hard: what the controller has taken in), in nano units."""
    part = quota.get(which) or {}
    hard = part.get("hard") if isinstance(part, Mapping) else None
    found: dict[str, int] = {}
    for name, value in (hard or {}).items():
        try:
            found[str(name)] = parse_nanos(value)
        except ValueError:
            continue
    return found


def used_of(quota: Object) -> Usage:
    used = Usage()
    for name, value in ((quota.get("status") or {}).get("used") or {}).items():
        try:
            used.add(str(name), parse_nanos(value), is_binary(value))
        except ValueError:
            continue
    return used


def pretty(values: Mapping[str, int], names: Iterable[str], binary: set[str]) -> str:
    """`a=1,b=2` in name order, as Kubernetes' prettyPrint (values in nano units)."""
    return ",".join(f"{n}={format_nanos(values.get(n, 0), n in binary)}" for n in sorted(names))


# What a quota limiting each name needs every container to set (the pod
# evaluator's validationSet): (requests or limits, the resource).
_VALIDATED = {
    "cpu": ("requests", "cpu"),
    "memory": ("requests", "memory"),
    "requests.cpu": ("requests", "cpu"),
    "requests.memory": ("requests", "memory"),
    "limits.cpu": ("limits", "cpu"),
    "limits.memory": ("limits", "memory"),
}


def required(hard: Iterable[str]) -> tuple[str, ...]:
    """The limits of `hard` every container of a pod must set (sorted), for
    missing_constraints; worked out once per quota."""
    return tuple(sorted(n for n in hard if n in _VALIDATED))


def missing_constraints(needed: tuple[str, ...], pod: Object) -> str:
    """The pod evaluator's Constraints: a quota limiting requests.cpu (or
    cpu, limits.memory ...: `needed`, from `required`) needs every container
    and init container to set it; '' when met. Kubernetes' text, resources
    and containers in name order: `must specify limits.cpu for: a,b;
    requests.memory for: a`."""
    if not needed:
        return ""
    spec = pod.get("spec") or {}
    lacking: dict[str, list[str]] = {}
    wanted = [(name, *_VALIDATED[name]) for name in needed]
    for key in ("containers", "initContainers"):
        for c in _containers(spec, key):
            set_by = {which: _quantities(c, which) for which in ("requests", "limits")}
            for name, which, resource in wanted:
                if resource not in set_by[which]:
                    lacking.setdefault(name, []).append(str(c.get("name")))
    if not lacking:
        return ""
    return "must specify " + "; ".join(
        f"{name} for: {','.join(sorted(lacking[name]))}" for name in sorted(lacking)
    )
