"""The RuntimeClass admission plugin, as kube-apiserver's: a pod that names a
RuntimeClass (spec.runtimeClassName) gets the class's overhead
(overhead.podFixed into spec.overhead) and scheduling (its nodeSelector
merged into the pod's, its tolerations appended but for duplicates) on
create; a class that does not exist is refused (403, `pod rejected:
RuntimeClass "x" not found`), as are an overhead the pod sets that differs
from its class's and a nodeSelector that conflicts with it.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.kinds import KindInfo
from controlplane.api.quantity import parse_quantity
from controlplane.apiserver.codec import meta_of
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import Forbidden

Object = dict[str, Any]


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    try:
        return a.keys() == b.keys() and all(parse_quantity(a[k]) == parse_quantity(b[k]) for k in a)
    except ValueError:
        return False


def admit(reg: Registry, info: KindInfo, obj: Object, old: Object | None, dry_run: bool) -> None:
    """The plugin (Registry.plugins): Pods on create only."""
    if info.key != "Pod" or old is not None:
        return
    spec = obj.get("spec")
    if not isinstance(spec, dict) or not spec.get("runtimeClassName"):
        return
    wanted = str(spec["runtimeClassName"])
    name = meta_of(obj).get("name") or ""

    def refuse(why: str) -> Forbidden:
        return Forbidden(f'pods "{name}" is forbidden: {why}')

    found = next(
        (rc for rc in reg.cached_objects("RuntimeClass")
         if (rc.get("metadata") or {}).get("name") == wanted),
        None,
    )  # fmt: skip
    if found is None:
        raise refuse(f'pod rejected: RuntimeClass "{wanted}" not found')
    fixed = (found.get("overhead") or {}).get("podFixed") or {}
    if fixed:
        have = spec.get("overhead")
        if have and not _same(dict(have), dict(fixed)):
            raise refuse("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined "
                         "Overhead")  # fmt: skip
        spec["overhead"] = dict(fixed)
    elif spec.get("overhead"):
        raise refuse("pod rejected: Pod Overhead set without corresponding RuntimeClass "
                     "defined Overhead")  # fmt: skip
    scheduling = found.get("scheduling") or {}
    selector = scheduling.get("nodeSelector") or {}
    if selector:
        mine = dict(spec.get("nodeSelector") or {})
        for key, value in selector.items():
            if key in mine and mine[key] != value:
                raise refuse(f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                             f"pod.spec.nodeSelector[{key}] = {mine[key]}")  # fmt: skip
            mine[key] = value
        spec["nodeSelector"] = mine
    tolerations = scheduling.get("tolerations") or []
    if tolerations:
        have_t = list(spec.get("tolerations") or [])
        spec["tolerations"] = have_t + [t for t in tolerations if t not in have_t]
