"""The pods/resize subresource (in-place pod resize, beta in Kubernetes
1.33), pure: what a write of it stores, and its rules.

A resize takes from the request only each container's `resources` (cpu and
memory requests and limits) and `resizePolicy`, for the app containers and
the native sidecars; everything else is the stored pod's. As Kubernetes
validates it: only cpu and memory may change, requests and limits once set
may not be removed, and the pod's QoS class may not change.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from controlplane.api.qos import qos_class

Problem = tuple[str, str]
RESIZABLE = ("cpu", "memory")


def _resizable(spec: Mapping[str, Any]) -> list[tuple[str, int, dict[str, Any]]]:
    out = []
    for key in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(key) or []):
            if isinstance(c, dict) and (key == "containers" or c.get("restartPolicy") == "Always"):
                out.append((key, i, c))
    return out


def resize_update(old: Mapping[str, Any], requested: Mapping[str, Any]) -> dict[str, Any]:
    new = copy.deepcopy(dict(old))
    wanted = requested.get("spec") or {}
    asked = {
        (key, c.get("name")): c
        for key in ("initContainers", "containers")
        for c in wanted.get(key) or []
        if isinstance(c, dict)
    }
    for key, _, c in _resizable(new.get("spec") or {}):
        req = asked.get((key, c.get("name")))
        if req is None:
            continue
        for field in ("resources", "resizePolicy"):
            if field in req:
                c[field] = copy.deepcopy(req[field])
    return new


def resize_problems(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Problem]:
    out: list[Problem] = []
    old_by = {(k, c.get("name")): c for k, _, c in _resizable(old.get("spec") or {})}
    for key, i, c in _resizable(new.get("spec") or {}):
        before = old_by.get((key, c.get("name"))) or {}
        path = f"spec.{key}[{i}].resources"
        for part in ("requests", "limits"):
            now = (c.get("resources") or {}).get(part) or {}
            was = (before.get("resources") or {}).get(part) or {}
            for res in set(now) | set(was):
                if res not in RESIZABLE and now.get(res) != was.get(res):
                    out.append((path, "Forbidden: only cpu and memory resources are mutable"))
                elif res in was and res not in now:
                    out.append((f"{path}.{part}[{res}]",
                                f"Forbidden: resource {part} cannot be removed"))  # fmt: skip
    before_qos, after_qos = qos_class(dict(old)).value, qos_class(dict(new)).value
    if before_qos != after_qos:
        out.append(("metadata", f'Invalid value: "{before_qos}": Pod QOS Class may not change '
                    "as a result of resizing"))  # fmt: skip
    return out
