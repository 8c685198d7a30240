"""Which lists of each built-in kind merge, and by which key: the one table.

Kubernetes declares, on the fields of its Go types, how a strategic merge
patch and server-side apply treat each list and map: `patchStrategy`
(`merge`, `retainKeys`, or both) and `patchMergeKey` (published in the
OpenAPI document as `x-kubernetes-patch-strategy` and
`x-kubernetes-patch-merge-key`). A list with no entry here is atomic: a
patch replaces it whole, and one apply manager owns it whole.

`PATCH_META[kind][path]` holds those facts for the kinds skiff serves. A path
is the field names from the object's root, dot-separated, with list items
adding no segment: `spec.template.spec.containers.env` is the env list of
any container of a Deployment's pod template. Pure data, plus the list
facts of custom kinds, which controlplane/api/crd.py records from their
schemas' `x-kubernetes-list-type` (`set_custom`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldMeta:
    """How one list or map field merges."""

    strategy: str  # "merge", "retainKeys" or "merge,retainKeys"
    merge_key: str = ""  # for a list of objects: the field that identifies an item

    @property
    def merges(self) -> bool:
        return "merge" in self.strategy.split(",")

    @property
    def retains_keys(self) -> bool:
        return "retainKeys" in self.strategy.split(",")


def _m(key: str = "") -> FieldMeta:
    return FieldMeta("merge", key)


_OBJECT_META = {
    "finalizers": _m(),
    "ownerReferences": _m("uid"),
}

_CONTAINER = {
    "ports": _m("containerPort"),
    "env": _m("name"),
    "volumeMounts": _m("mountPath"),
    "volumeDevices": _m("devicePath"),
}

_POD_SPEC = {
    "volumes": FieldMeta("merge,retainKeys", "name"),
    "initContainers": _m("name"),
    "containers": _m("name"),
    "ephemeralContainers": _m("name"),
    "imagePullSecrets": _m("name"),
    "hostAliases": _m("ip"),
    "topologySpreadConstraints": _m("topologyKey"),
    "schedulingGates": _m("name"),
    "resourceClaims": FieldMeta("merge,retainKeys", "name"),
}
for _c in ("initContainers", "containers", "ephemeralContainers"):
    _POD_SPEC.update({f"{_c}.{field}": meta for field, meta in _CONTAINER.items()})

_CONDITIONS = {"conditions": _m("type")}

_POD_STATUS = {**_CONDITIONS, "podIPs": _m("ip"), "hostIPs": _m("ip")}


def _under(prefix: str, fields: dict[str, FieldMeta]) -> dict[str, FieldMeta]:
    return {f"{prefix}.{path}": meta for path, meta in fields.items()}


def _kind(
    pod_spec_at: str = "",
    status: dict[str, FieldMeta] | None = None,
    extra: dict[str, FieldMeta] | None = None,
) -> dict[str, FieldMeta]:
    table = _under("metadata", _OBJECT_META)
    if pod_spec_at:
        table |= _under(pod_spec_at, _POD_SPEC)
        template = pod_spec_at.removesuffix(".spec")
        if template != pod_spec_at:
            table |= _under(f"{template}.metadata", _OBJECT_META)
    table |= _under("status", status or {})
    return table | (extra or {})


_TEMPLATE = "spec.template.spec"

PATCH_META: dict[str, dict[str, FieldMeta]] = {
    "Pod": _kind("spec", _POD_STATUS),
    "ReplicaSet": _kind(_TEMPLATE, _CONDITIONS),
    "Deployment": _kind(_TEMPLATE, _CONDITIONS, {"spec.strategy": FieldMeta("retainKeys")}),
    "StatefulSet": _kind(_TEMPLATE, _CONDITIONS),
    "DaemonSet": _kind(_TEMPLATE, _CONDITIONS, {"spec.updateStrategy": FieldMeta("retainKeys")}),
    "Job": _kind(_TEMPLATE, _CONDITIONS),
    "CronJob": _kind(
        "spec.jobTemplate.spec.template.spec",
        extra=_under("spec.jobTemplate.metadata", _OBJECT_META),
    ),
    "Service": _kind(status=_CONDITIONS, extra={"spec.ports": _m("port")}),
    "Endpoints": _kind(),
    "Node": _kind(status={**_CONDITIONS, "addresses": _m("type")}, extra={"spec.podCIDRs": _m()}),
    "Namespace": _kind(status=_CONDITIONS),
    "ConfigMap": _kind(),
    "Secret": _kind(),
    "Event": _kind(),
    "HorizontalPodAutoscaler": _kind(status=_CONDITIONS),
    "Lease": _kind(),
    "PriorityClass": _kind(),
    "PodGroup": _kind(status=_CONDITIONS),
}


# Custom kinds' list facts, from their CRD schemas' x-kubernetes-list-type
# (server-side apply merges those lists; strategic merge patch stays refused).
_custom: dict[str, dict[str, FieldMeta]] = {}


def set_custom(kind: str, table: dict[str, FieldMeta]) -> None:
    """Record (or, with an empty table, forget) a custom kind's list facts."""
    if table:
        _custom[kind] = dict(table)
    else:
        _custom.pop(kind, None)


def supports(kind: str) -> bool:
    """Whether `kind` has strategic merge patch facts (the built-in kinds).
    Kubernetes refuses strategic merge patch for custom resources (415)."""
    return kind in PATCH_META


def field_meta(kind: str, path: str) -> FieldMeta | None:
    """The merge facts of the field at `path` of `kind`, None when atomic/plain."""
    table = PATCH_META.get(kind)
    if table is None:
        table = _custom.get(kind, {})
    return table.get(path)
