"""The Kubernetes version skiff reports (`/version`), decided from what it serves.

Each Kubernetes minor release made API surface available by default
(beta or GA); `FEATURES` lists, per minor, such surface a client can see,
each with a check of skiff's own tables: a field its schema keeps, a
discovery version, a subresource its discovery lists. The version skiff
serves is the newest minor all of whose features (and every earlier
minor's) skiff has: `v1.<minor>.0+skiff` (build metadata, as k3s writes
`+k3s1`). The version moves by itself when skiff grows the surface of the
next minor (pods/resize brings 1.33), and falls if a feature is removed.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable
from functools import cache
from typing import Any

from controlplane.api.kinds.registry import schema_types
from controlplane.apiserver.rest import discovery

OLDEST = 27  # the oldest kubectl skiff is tested with


def _field(kind_type: str, name: str) -> Callable[[], bool]:
    def check() -> bool:
        found = schema_types().get(kind_type)
        return found is not None and name in found.fields

    return check


def _subresource(group_version: str, name: str) -> Callable[[], bool]:
    def check() -> bool:
        found = discovery.resource_list(group_version) or {}
        return any(r.get("name") == name for r in found.get("resources", []))

    return check


def _aggregated_discovery() -> bool:
    return "v2" in discovery.AGGREGATED_VERSIONS


# (minor, what, check): surface on by default from that minor on.
FEATURES: tuple[tuple[int, str, Callable[[], bool]], ...] = (
    (27, "Pod spec.schedulingGates (beta)", _field("PodSpec", "schedulingGates")),
    (27, "StatefulSet spec.ordinals (beta)", _field("StatefulSetSpec", "ordinals")),
    (
        29,
        "sidecar containers: initContainers[].restartPolicy (beta)",
        _field("Container", "restartPolicy"),
    ),
    (29, "Job spec.podReplacementPolicy (beta)", _field("JobSpec", "podReplacementPolicy")),
    (29, "Job spec.backoffLimitPerIndex (beta)", _field("JobSpec", "backoffLimitPerIndex")),
    (30, "aggregated discovery apidiscovery.k8s.io/v2 (GA)", _aggregated_discovery),
    (31, "Job spec.successPolicy (beta)", _field("JobSpec", "successPolicy")),
    (31, "Service spec.trafficDistribution (beta)", _field("ServiceSpec", "trafficDistribution")),
    (32, "Job spec.managedBy (beta)", _field("JobSpec", "managedBy")),
    (
        33,
        "in-place pod resize: the pods/resize subresource (beta)",
        _subresource("v1", "pods/resize"),
    ),
)


def missing() -> list[tuple[int, str]]:
    """The features skiff lacks, oldest first."""
    return [(minor, what) for minor, what, check in FEATURES if not check()]


@cache
def served_minor() -> int:
    """The newest minor whose surface (and every earlier one's) skiff serves."""
    lacking = missing()
    newest = max(minor for minor, _, _ in FEATURES)
    return max(OLDEST, lacking[0][0] - 1) if lacking else newest


def version() -> dict[str, Any]:
    minor = served_minor()
    return {
        "major": "1",
        "minor": str(minor),
        "gitVersion": f"v1.{minor}.0+skiff",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": f"python{sys.version_info.major}.{sys.version_info.minor}",
        "compiler": "cpython",
        "platform": f"{platform.system().lower()}/{platform.machine()}",
    }
