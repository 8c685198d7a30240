"""The LimitRanger admission plugin: a namespace's LimitRanges applied to the
pods and claims created in it, as kube-apiserver's LimitRanger does.

On a Pod's create, each container (and init container) missing a limit or
a request that a `Container` item defaults gets it (default,
defaultRequest), noted in the pod's `kubernetes.io/limit-ranger`
annotation; then every container is checked against each `Container`
item's min, max and maxLimitRequestRatio, and the pod's totals against
each `Pod` item's. A PersistentVolumeClaim's storage request is checked
against `PersistentVolumeClaim` items on create and update. A refusal is a
403 listing every violation in Kubernetes' words (`minimum cpu usage per
Container is 100m, but request is 50m`).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from controlplane.api.kinds import KindInfo, by_kind
from controlplane.api.kinds.core.limitrange import canonical
from controlplane.api.quantity import parse_quantity
from controlplane.api.quota import pod_resources
from controlplane.apiserver.codec import decode, list_prefix, meta_of
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import Forbidden

Object = dict[str, Any]

ANNOTATION = "kubernetes.io/limit-ranger"


def limit_ranges(reg: Registry, namespace: str) -> list[Object]:
    """The namespace's LimitRanges, decoded (shared: read only)."""
    info = by_kind("LimitRange")
    found: list[Object] = reg.cached(
        list_prefix(info, namespace), namespace,
        lambda: [decode(d, r) for d, r in reg.list("LimitRange", namespace).items],
    )  # fmt: skip
    return found


def _items(ranges: list[Object], kind: str) -> list[Object]:
    return [
        item
        for lr in ranges
        for item in (lr.get("spec") or {}).get("limits") or []
        if isinstance(item, dict) and item.get("type") == kind
    ]


def _default(containers: list[Any], items: list[Object], prefix: str) -> list[str]:
    notes = []
    for c in containers:
        if not isinstance(c, dict):
            continue
        resources = c.setdefault("resources", {})
        for which, source, word in (("limits", "default", "limit"),
                                    ("requests", "defaultRequest", "request")):  # fmt: skip
            wanted: dict[str, Any] = {}
            for item in items:
                for name, value in (item.get(source) or {}).items():
                    wanted.setdefault(name, value)
            have = resources.get(which) or {}
            added = sorted(n for n in wanted if n not in have)
            if added:
                resources[which] = {**have, **{n: wanted[n] for n in added}}
                notes.append((word, f"{', '.join(added)} {word} for {prefix} {c.get('name')}"))
        if not resources:
            c.pop("resources")
    # Kubernetes lists a container's requests before its limits.
    return [n for word in ("request", "limit") for w, n in notes if w == word]


def _amounts(values: dict[str, Any]) -> dict[str, tuple[Fraction, str]]:
    found = {}
    for name, value in values.items():
        try:
            found[str(name)] = (parse_quantity(value), canonical(value))
        except ValueError:
            continue
    return found


def check(kind: str, item: Object, requests: dict[str, Any], limits: dict[str, Any],
          claim: bool = False) -> list[str]:  # fmt: skip
    """minConstraint, maxConstraint (maxRequestConstraint for claims) and
    limitRequestRatioConstraint of one item, in Kubernetes' words."""
    req, lim = _amounts(requests), _amounts(limits)
    errs = []
    for name, value in sorted((item.get("min") or {}).items()):
        bound = canonical(value)
        enforced = parse_quantity(value)
        if name not in req:
            errs.append(f"minimum {name} usage per {kind} is {bound}.  No request is specified")
        elif req[name][0] < enforced:
            errs.append(
                f"minimum {name} usage per {kind} is {bound}, but request is {req[name][1]}"
            )
        elif name in lim and lim[name][0] < enforced:
            errs.append(f"minimum {name} usage per {kind} is {bound}, but limit is {lim[name][1]}")
    for name, value in sorted((item.get("max") or {}).items()):
        bound = canonical(value)
        enforced = parse_quantity(value)
        observed, word = (req, "request") if claim else (lim, "limit")
        if name not in observed:
            errs.append(f"maximum {name} usage per {kind} is {bound}.  No {word} is specified")
        elif observed[name][0] > enforced:
            errs.append(f"maximum {name} usage per {kind} is {bound}, but {word} is "
                        f"{observed[name][1]}")  # fmt: skip
        elif not claim and name in req and req[name][0] > enforced:
            errs.append(f"maximum {name} usage per {kind} is {bound}, but request is "
                        f"{req[name][1]}")  # fmt: skip
    for name, value in sorted((item.get("maxLimitRequestRatio") or {}).items()):
        bound = canonical(value)
        if not req.get(name, (0, ""))[0]:
            errs.append(f"{name} max limit to request ratio per {kind} is {bound}, but no "
                        "request is specified or request is 0")  # fmt: skip
        elif not lim.get(name, (0, ""))[0]:
            errs.append(f"{name} max limit to request ratio per {kind} is {bound}, but no "
                        "limit is specified or limit is 0")  # fmt: skip
        else:
            ratio = lim[name][0] / req[name][0]
            if ratio > parse_quantity(value):
                errs.append(f"{name} max limit to request ratio per {kind} is {bound}, but "
                            f"provided ratio is {float(ratio):f}")  # fmt: skip
    return errs


def _resources(c: Any, which: str) -> dict[str, Any]:
    found = ((c.get("resources") or {}).get(which) or {}) if isinstance(c, dict) else {}
    return found if isinstance(found, dict) else {}


def _pod(ranges: list[Object], pod: Object) -> list[str]:
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return []
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    inits = [c for c in spec.get("initContainers") or [] if isinstance(c, dict)]
    container_items = _items(ranges, "Container")
    notes = _default(containers, container_items, "container")
    notes += _default(inits, container_items, "init container")
    if notes:
        annotations = meta_of(pod).setdefault("annotations", {})
        annotations[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)
    errs = []
    for item in container_items:
        for c in containers + inits:
            errs += check("Container", item, _resources(c, "requests"), _resources(c, "limits"))
    pod_items = _items(ranges, "Pod")
    if pod_items:  # the pod's totals without its overhead, as quantities
        bare = {"spec": {**spec, "overhead": {}}}
        requests, limits = (pod_resources(bare, w) for w in ("requests", "limits"))
        for item in pod_items:
            errs += check("Pod", item, requests.formatted(requests.values),
                          limits.formatted(limits.values))  # fmt: skip
    return errs


def _claim(ranges: list[Object], claim: Object) -> list[str]:
    resources = ((claim.get("spec") or {}).get("resources")) or {}
    errs = []
    for item in _items(ranges, "PersistentVolumeClaim"):
        errs += check("PersistentVolumeClaim", item, resources.get("requests") or {},
                      resources.get("limits") or {}, claim=True)  # fmt: skip
    return errs


def admit(reg: Registry, info: KindInfo, obj: Object, old: Object | None, dry_run: bool) -> None:
    """The plugin (Registry.plugins): defaults, then limits; Forbidden on a violation."""
    check_of: Callable[[list[Object], Object], list[str]]
    if info.key == "Pod" and old is None:
        check_of = _pod
    elif info.key == "PersistentVolumeClaim":
        check_of = _claim
    else:
        return
    meta = meta_of(obj)
    ranges = limit_ranges(reg, str(meta.get("namespace") or ""))
    if not ranges:
        return
    errs = check_of(ranges, obj)
    if errs:
        text = errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"
        raise Forbidden(f'{info.resource} "{meta.get("name") or ""}" is forbidden: {text}')
