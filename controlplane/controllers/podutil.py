"""Small pure helpers over Kubernetes-shaped dicts shared by the controllers.

Timestamps (RFC 3339 to epoch seconds and back), pod phase/readiness/
availability, owner references (controller ref, building one, adoption
patches), conditions (find, set keeping lastTransitionTime when the status
does not change) and label-selector evaluation. Pure: no I/O, no clock
(callers pass `now`), and never mutates its arguments unless a name says so.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from controlplane.client.selectors import Selector, SelectorError, from_label_selector
from machinery.rfc3339 import format_time, parse_time

Object = dict[str, Any]


def _mapping(value: Any) -> Mapping[str, Any]:
    """`value` if it is a mapping, else an empty one. A plain dict (what the
    informers hold) is told by its type: isinstance against the Mapping ABC
    costs about three times as much, and the controllers ask many times per event."""
    return value if type(value) is dict or isinstance(value, Mapping) else {}


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(obj.get("metadata"))


def name_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("name", ""))


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("namespace") or "")


def uid_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("uid", ""))


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return _mapping(meta(obj).get("labels"))


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return _mapping(meta(obj).get("annotations"))


def created_at(obj: Mapping[str, Any]) -> float:
    return parse_time(meta(obj).get("creationTimestamp")) or 0.0


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def without_finalizer(obj: Mapping[str, Any], finalizer: str) -> Object:
    """A deep copy of `obj` whose metadata.finalizers lack `finalizer`."""
    out: Object = copy.deepcopy(dict(obj))
    out.setdefault("metadata", {})["finalizers"] = [
        f for f in meta(obj).get("finalizers") or [] if f != finalizer
    ]
    return out


def spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(obj.get("spec"))


def status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(obj.get("status"))


def selector_of(obj: Mapping[str, Any]) -> Selector:
    """The object's spec.selector as a Selector; a bad one matches nothing."""
    raw = spec(obj).get("selector")
    try:
        return from_label_selector(raw if isinstance(raw, Mapping) else None)
    except SelectorError:
        return from_label_selector(None)


# ---- pods -------------------------------------------------------------------


def phase(pod: Mapping[str, Any]) -> str:
    return str(status(pod).get("phase") or "Pending")


def is_terminated(pod: Mapping[str, Any]) -> bool:
    return phase(pod) in ("Succeeded", "Failed")


def is_active(pod: Mapping[str, Any]) -> bool:
    """Counts toward a controller's replicas: not finished, not being deleted."""
    return not is_terminated(pod) and not is_deleting(pod)


def condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for c in status(obj).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == type_:
            return c
    return None


def is_ready(pod: Mapping[str, Any]) -> bool:
    c = condition(pod, "Ready")
    return c is not None and c.get("status") == "True"


def ready_since(pod: Mapping[str, Any]) -> float | None:
    c = condition(pod, "Ready")
    if c is None or c.get("status") != "True":
        return None
    return parse_time(c.get("lastTransitionTime")) or 0.0


def is_available(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> bool:
    """Ready for at least minReadySeconds (Kubernetes' IsPodAvailable)."""
    if min_ready_seconds <= 0:
        return is_ready(pod)
    since = ready_since(pod)
    if since is None:
        return False
    return min_ready_seconds <= 0 or since + min_ready_seconds <= now


def restart_count(pod: Mapping[str, Any]) -> int:
    return sum(
        int(c.get("restartCount") or 0)
        for c in status(pod).get("containerStatuses") or []
        if isinstance(c, Mapping)
    )


# ---- owner references --------------------------------------------------------


def controller_ref(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in meta(obj).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller"):
            return ref
    return None


def owner_ref(owner: Mapping[str, Any], controller: bool = True) -> Object:
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner.get("kind", ""),
        "name": name_of(owner),
        "uid": uid_of(owner),
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def is_controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    ref = controller_ref(obj)
    return ref is not None and ref.get("uid") == uid_of(owner)


# ---- conditions ---------------------------------------------------------------


def set_condition(
    conditions: list[Object] | None,
    type_: str,
    status_: str,
    reason: str,
    message: str,
    now: float,
    update_probe: bool = False,
) -> list[Object]:
    """A new list with the condition set; lastTransitionTime moves only on a status change."""
    out: list[Object] = []
    found = False
    for c in conditions or []:
        if c.get("type") != type_:
            out.append(c)
            continue
        found = True
        new = dict(c)
        if c.get("status") != status_:
            new["lastTransitionTime"] = format_time(now)
        new.update({"status": status_, "reason": reason, "message": message})
        if update_probe:
            new["lastUpdateTime"] = format_time(now)
        out.append(new)
    if not found:
        new = {
            "type": type_,
            "status": status_,
            "reason": reason,
            "message": message,
            "lastTransitionTime": format_time(now),
        }
        if update_probe:
            new["lastUpdateTime"] = format_time(now)
        out.append(new)
    return out


def pod_template_labels(owner: Mapping[str, Any]) -> Mapping[str, str]:
    template = spec(owner).get("template") or {}
    return labels_of(template)
