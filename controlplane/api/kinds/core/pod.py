"""Pod (v1)."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef, Subresource
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import POD_STATUS, facts

DEFINITION = KindDef(
    KindInfo("Pod", "v1", "pods", "pod", ("po",), categories=("all",)),
    patch_meta=facts("spec", POD_STATUS),
    subresources=(
        Subresource("binding", ("create",), "", "v1", "Binding"),
        Subresource("eviction", ("create",), "policy", "v1", "Eviction"),
        Subresource("log", ("get",), "", "", "Pod"),
        Subresource("exec", ("create", "get"), "", "", "PodExecOptions"),
        Subresource("attach", ("create", "get"), "", "", "PodAttachOptions"),
        Subresource("portforward", ("create", "get"), "", "", "PodPortForwardOptions"),
    ),
)
