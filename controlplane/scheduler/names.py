"""The names of the in-tree plugins, and the default profile: one home for both.

Plugins take their `NAME` from here, `config.py` checks a profile's plugin
names against `ALL` (without importing any plugin), and `registry.py` maps
each name to its factory.
"""

from __future__ import annotations

PRIORITY_SORT = "PrioritySort"
NODE_UNSCHEDULABLE = "NodeUnschedulable"
NODE_NAME = "NodeName"
NODE_PORTS = "NodePorts"
NODE_CONDITIONS = "NodeConditions"
NODE_RESOURCES_FIT = "NodeResourcesFit"
BALANCED_ALLOCATION = "NodeResourcesBalancedAllocation"
IMAGE_LOCALITY = "ImageLocality"
NODE_AFFINITY = "NodeAffinity"
TAINT_TOLERATION = "TaintToleration"
INTER_POD_AFFINITY = "InterPodAffinity"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
SELECTOR_SPREAD = "SelectorSpread"
DEFAULT_PREEMPTION = "DefaultPreemption"
COSCHEDULING = "Coscheduling"
DEFAULT_BINDER = "DefaultBinder"
VOLUME_RESTRICTIONS = "VolumeRestrictions"
NODE_VOLUME_LIMITS = "NodeVolumeLimits"
VOLUME_BINDING = "VolumeBinding"
VOLUME_ZONE = "VolumeZone"

# The default profile, in filter order, with kube-scheduler's default score weights.
DEFAULT_PLUGINS: tuple[tuple[str, int], ...] = (
    (PRIORITY_SORT, 0),
    (NODE_UNSCHEDULABLE, 0),
    (NODE_NAME, 0),
    (TAINT_TOLERATION, 3),
    (NODE_AFFINITY, 2),
    (NODE_PORTS, 0),
    (NODE_RESOURCES_FIT, 1),
    (NODE_CONDITIONS, 0),
    (VOLUME_RESTRICTIONS, 0),
    (NODE_VOLUME_LIMITS, 0),
    (VOLUME_BINDING, 0),
    (VOLUME_ZONE, 0),
    (POD_TOPOLOGY_SPREAD, 2),
    (INTER_POD_AFFINITY, 2),
    (BALANCED_ALLOCATION, 1),
    (IMAGE_LOCALITY, 1),
    # Coscheduling's PostFilter runs before preemption: a member that fits
    # nowhere releases its waiting siblings first, so preemption sees the
    # whole gang and never evicts for a gang that would still not fit.
    (COSCHEDULING, 0),
    (DEFAULT_PREEMPTION, 0),
    (DEFAULT_BINDER, 0),
)

ALL: frozenset[str] = frozenset((*(n for n, _ in DEFAULT_PLUGINS), SELECTOR_SPREAD))
