"""Profiles: one `Framework` per schedulerName, its plugins built by their factories.

`build_profiles(config, handle)` calls each plugin's factory `new(args,
handle)` from the registry; a factory refusing its args is a `ConfigError`
naming the profile and the plugin. The handle is the scheduler's (plugins
keep it), or any object satisfying `handle.Handle` for checking a
configuration before a scheduler exists.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from controlplane.scheduler.config import ConfigError, SchedulerConfig
from controlplane.scheduler.framework import Framework, ProfilePlugin
from controlplane.scheduler.handle import Handle
from controlplane.scheduler.registry import REGISTRY, Factory


def build_profiles(
    config: SchedulerConfig,
    handle: Handle,
    registry: Mapping[str, Factory] = REGISTRY,
    seed: int = 0,
) -> dict[str, Framework]:
    """One Framework per profile; a factory refusing its args is a ConfigError."""
    out: dict[str, Framework] = {}
    for prof in config.profiles:
        plugins = []
        for spec in prof.plugins:
            try:
                plugin = registry[spec.name](dict(spec.args), handle)
            except (ValueError, KeyError, TypeError) as e:
                raise ConfigError(f"profile {prof.scheduler_name}: plugin {spec.name}: {e}") from e
            plugins.append(ProfilePlugin(plugin, spec.weight))
        pct = prof.percentage_of_nodes_to_score or config.percentage_of_nodes_to_score
        out[prof.scheduler_name] = Framework(prof.scheduler_name, plugins, pct, random.Random(seed))
    return out
