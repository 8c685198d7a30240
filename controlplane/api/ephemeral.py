"""Pod rules for native sidecars and ephemeral containers, as Kubernetes'
pod validation has them (pure; each problem is (field path, message)).

Ephemeral containers (kubectl debug, the pods/ephemeralcontainers
subresource): names unique among all the pod's containers; no ports,
probes, lifecycle, resources, resizePolicy, restartPolicy or subPath
mounts ("cannot be set for an Ephemeral Container"); a targetContainerName
must name a container of the pod; once added one may be neither changed
nor removed. `ephemeral_update` builds what an update of the subresource
stores: the stored pod with only spec.ephemeralContainers taken from the
request.

Init containers: restartPolicy may only be Always (a native sidecar);
probes and lifecycle hooks only on sidecars.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

Problem = tuple[str, str]
FORBIDDEN_EPHEMERAL = (
    "ports",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "resources",
    "resizePolicy",
    "restartPolicy",
)
_EC = "cannot be set for an Ephemeral Container"


def _names(spec: Mapping[str, Any], key: str) -> list[str]:
    return [str(c.get("name")) for c in spec.get(key) or [] if isinstance(c, dict)]


def ephemeral_problems(pod: Mapping[str, Any]) -> list[Problem]:
    spec = pod.get("spec") or {}
    out: list[Problem] = []
    regular = set(_names(spec, "initContainers")) | set(_names(spec, "containers"))
    seen: set[str] = set()
    for i, c in enumerate(spec.get("ephemeralContainers") or []):
        path = f"spec.ephemeralContainers[{i}]"
        if not isinstance(c, dict):
            out.append((path, "must be an object"))
            continue
        name = str(c.get("name") or "")
        if name and (name in regular or name in seen):
            out.append((f"{path}.name", f'Duplicate value: "{name}"'))
        seen.add(name)
        for field in FORBIDDEN_EPHEMERAL:
            if c.get(field) not in (None, {}, []):
                out.append((f"{path}.{field}", f"Forbidden: {_EC}"))
        for j, vm in enumerate(c.get("volumeMounts") or []):
            if isinstance(vm, dict) and vm.get("subPath"):
                out.append((f"{path}.volumeMounts[{j}].subPath", f"Forbidden: {_EC}"))
        target = c.get("targetContainerName")
        if target and target not in regular:
            out.append((f"{path}.targetContainerName", f'Not found: "{target}"'))
    return out


def init_container_problems(pod: Mapping[str, Any]) -> list[Problem]:
    spec = pod.get("spec") or {}
    out: list[Problem] = []
    for i, c in enumerate(spec.get("initContainers") or []):
        if not isinstance(c, dict):
            continue
        path = f"spec.initContainers[{i}]"
        policy = c.get("restartPolicy")
        if policy is not None and policy != "Always":
            out.append((f"{path}.restartPolicy",
                        f'Unsupported value: "{policy}": supported values: "Always"'))  # fmt: skip
        if policy == "Always":
            continue
        for field in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
            if c.get(field) is not None:
                what = "may not be set for init containers without restartPolicy=Always"
                out.append((f"{path}.{field}", f"Forbidden: {what}"))
    return out


def ephemeral_update(old: Mapping[str, Any], requested: Mapping[str, Any]) -> dict[str, Any]:
    """What a write of pods/ephemeralcontainers stores: `old` with the
    request's spec.ephemeralContainers and nothing else of it."""
    new = copy.deepcopy(dict(old))
    wanted = (requested.get("spec") or {}).get("ephemeralContainers")
    spec = new.setdefault("spec", {})
    if wanted:
        spec["ephemeralContainers"] = copy.deepcopy(wanted)
    else:
        spec.pop("ephemeralContainers", None)
    return new


def ephemeral_update_problems(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Problem]:
    """Existing ephemeral containers may be neither removed nor changed."""
    out: list[Problem] = []
    now = {
        c.get("name"): c
        for c in (new.get("spec") or {}).get("ephemeralContainers") or []
        if isinstance(c, dict)
    }
    for c in (old.get("spec") or {}).get("ephemeralContainers") or []:
        name = c.get("name")
        if name not in now:
            out.append(("spec.ephemeralContainers",
                        f'Forbidden: existing ephemeral containers "{name}" may not be removed'))  # fmt: skip
        elif json.dumps(now[name], sort_keys=True) != json.dumps(c, sort_keys=True):
            out.append((f"spec.ephemeralContainers[{name}]",
                        f'Forbidden: existing ephemeral containers "{name}" may not be changed'))  # fmt: skip
    return out
