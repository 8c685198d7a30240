"""Volcano's PodGroup (scheduling.volcano.sh/v1beta1), which also serves the default
scheduler's Coscheduling; skiff's earlier scheduling.skiff.dev/v1alpha1 manifests are
still accepted."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, facts

DEFINITION = KindDef(
    KindInfo(
        "PodGroup",
        "scheduling.volcano.sh/v1beta1",
        "podgroups",
        "podgroup",
        ("pg", "podgroup-v1beta1"),
        also_api_versions=("scheduling.skiff.dev/v1alpha1",),
    ),
    patch_meta=facts(status=CONDITIONS),
)
