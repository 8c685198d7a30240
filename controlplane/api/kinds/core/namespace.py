"""Namespace (v1): a scope for names; its name is a DNS-1123 label."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, facts

DEFINITION = KindDef(
    KindInfo("Namespace", "v1", "namespaces", "namespace", ("ns",), namespaced=False),
    name_rule="label",
    patch_meta=facts(status=CONDITIONS),
)
