"""Node (v1): a worker; the agent registers it with its status."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, facts, merge

DEFINITION = KindDef(
    KindInfo("Node", "v1", "nodes", "node", ("no",), namespaced=False),
    keeps_status_on_create=True,
    patch_meta=facts(
        status={**CONDITIONS, "addresses": merge("type")}, extra={"spec.podCIDRs": merge()}
    ),
)
