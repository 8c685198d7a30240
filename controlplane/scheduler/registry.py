"""Plugin registry: a plain dict from plugin name to factory(args, handle) -> plugin.

`NODE_REGISTRY` holds the plugins that judge nodes (filters and scores) and
need only a `NodeHandle`: what the batch scheduler builds its Framework from.

Out-of-tree plugins are added by putting a factory in a copy of `REGISTRY`
and passing it to `profile.build_profiles` (or `scheduler.from_config`).
The names and the default profile live in `names.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controlplane.scheduler.handle import Handle, NodeHandle
from controlplane.scheduler.names import DEFAULT_PLUGINS
from controlplane.scheduler.plugins import (
    balanced_allocation,
    coscheduling,
    default_binder,
    default_preemption,
    image_locality,
    inter_pod_affinity,
    node_affinity,
    node_conditions,
    node_name,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    node_volume_limits,
    pod_topology_spread,
    priority_sort,
    selector_spread,
    taint_toleration,
    volume_binding,
    volume_restrictions,
    volume_zone,
)

Factory = Callable[[dict[str, Any], Handle], Any]
NodeFactory = Callable[[dict[str, Any], NodeHandle], Any]

NODE_REGISTRY: dict[str, NodeFactory] = {
    node_unschedulable.NAME: node_unschedulable.new,
    node_name.NAME: node_name.new,
    node_ports.NAME: node_ports.new,
    node_conditions.NAME: node_conditions.new,
    node_resources_fit.NAME: node_resources_fit.new,
    balanced_allocation.NAME: balanced_allocation.new,
    image_locality.NAME: image_locality.new,
    node_affinity.NAME: node_affinity.new,
    taint_toleration.NAME: taint_toleration.new,
    inter_pod_affinity.NAME: inter_pod_affinity.new,
    pod_topology_spread.NAME: pod_topology_spread.new,
    volume_restrictions.NAME: volume_restrictions.new,
    node_volume_limits.NAME: node_volume_limits.new,
    volume_binding.NAME: volume_binding.new,
    volume_zone.NAME: volume_zone.new,
}

REGISTRY: dict[str, Factory] = {
    priority_sort.NAME: priority_sort.new,
    **NODE_REGISTRY,
    selector_spread.NAME: selector_spread.new,
    default_preemption.NAME: default_preemption.new,
    coscheduling.NAME: coscheduling.new,
    default_binder.NAME: default_binder.new,
}

__all__ = ["DEFAULT_PLUGINS", "NODE_REGISTRY", "REGISTRY", "Factory", "NodeFactory"]
