"""Service (v1); its name is a DNS-1123 label."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, facts, merge

DEFINITION = KindDef(
    KindInfo("Service", "v1", "services", "service", ("svc",), categories=("all",)),
    name_rule="label",
    patch_meta=facts(status=CONDITIONS, extra={"spec.ports": merge("port")}),
)
