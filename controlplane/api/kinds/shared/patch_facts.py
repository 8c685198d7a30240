"""Merge facts several kinds share, and the builder kinds declare theirs with.

Kubernetes declares, on the fields of its Go types, how a strategic merge
patch and server-side apply treat each list and map: `patchStrategy`
(`merge`, `retainKeys`, or both) and `patchMergeKey`. A kind's definition
holds those facts by path (KindDef.patch_meta): the field names from the
object's root, dot-separated, with list items adding no segment:
`spec.template.spec.containers.env` is the env list of any container of a
Deployment's pod template. A list with no entry is atomic: a patch replaces
it whole, and one apply manager owns it whole. Pure data.
"""

from __future__ import annotations

from controlplane.api.kinds.definition import FieldMeta


def merge(key: str = "") -> FieldMeta:
    return FieldMeta("merge", key)


OBJECT_META = {
    "finalizers": merge(),
    "ownerReferences": merge("uid"),
}

CONTAINER = {
    "ports": merge("containerPort"),
    "env": merge("name"),
    "volumeMounts": merge("mountPath"),
    "volumeDevices": merge("devicePath"),
}

POD_SPEC = {
    "volumes": FieldMeta("merge,retainKeys", "name"),
    "initContainers": merge("name"),
    "containers": merge("name"),
    "ephemeralContainers": merge("name"),
    "imagePullSecrets": merge("name"),
    "hostAliases": merge("ip"),
    "topologySpreadConstraints": merge("topologyKey"),
    "schedulingGates": merge("name"),
    "resourceClaims": FieldMeta("merge,retainKeys", "name"),
}
for _c in ("initContainers", "containers", "ephemeralContainers"):
    POD_SPEC.update({f"{_c}.{field}": meta for field, meta in CONTAINER.items()})

CONDITIONS = {"conditions": merge("type")}

POD_STATUS = {**CONDITIONS, "podIPs": merge("ip"), "hostIPs": merge("ip")}

TEMPLATE = "spec.template.spec"  # where a workload's pod spec is


def under(prefix: str, fields: dict[str, FieldMeta]) -> dict[str, FieldMeta]:
    return {f"{prefix}.{path}": meta for path, meta in fields.items()}


def facts(
    pod_spec_at: str = "",
    status: dict[str, FieldMeta] | None = None,
    extra: dict[str, FieldMeta] | None = None,
) -> dict[str, FieldMeta]:
    """A kind's table: metadata's facts, a pod spec's at `pod_spec_at` (and its
    template's metadata), the status's, and any others."""
    table = under("metadata", OBJECT_META)
    if pod_spec_at:
        table |= under(pod_spec_at, POD_SPEC)
        template = pod_spec_at.removesuffix(".spec")
        if template != pod_spec_at:
            table |= under(f"{template}.metadata", OBJECT_META)
    table |= under("status", status or {})
    return table | (extra or {})
