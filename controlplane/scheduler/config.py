"""Scheduler configuration: profiles from YAML, validated before anything starts.

```yaml
percentageOfNodesToScore: 0        # 0 = adaptive (50 - nodes/125, at least 5%)
queue: {order: Priority, initialBackoffSeconds: 1, maxBackoffSeconds: 10}   # order: DRF too
scoreAnnotation: true              # per-plugin scores in the pod annotation at bind
profiles:
- schedulerName: default-scheduler
  plugins:                         # optional: the default set when absent
  - NodeUnschedulable
  - {name: NodeResourcesFit, weight: 1}
  disabled: [ImageLocality]        # optional: remove from the (default) set
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
```

kube-scheduler's shape (`plugins: {multiPoint: {enabled: [...], disabled:
[...]}, score: {enabled: [{name, weight}]}}`) is accepted too. An unknown
plugin, a negative weight or a duplicate schedulerName is a `ConfigError`
whose message says what and where. Config values are frozen dataclasses;
nothing here is global. This module only parses: it checks plugin names
against `names.ALL` (or the names given) and imports no plugin; building the
profiles (where a plugin refuses its args) is `profile.py`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from controlplane.scheduler import names
from controlplane.scheduler.names import DEFAULT_PLUGINS
from controlplane.scheduler.podinfo import DEFAULT_SCHEDULER


class ConfigError(ValueError):
    """The configuration is refused; the message gives the reason."""


@dataclass(frozen=True)
class PluginSpec:
    name: str
    weight: int
    args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ProfileConfig:
    scheduler_name: str
    plugins: tuple[PluginSpec, ...]
    percentage_of_nodes_to_score: int = 0


@dataclass(frozen=True)
class SchedulerConfig:
    profiles: tuple[ProfileConfig, ...]
    percentage_of_nodes_to_score: int = 0
    queue_order: str = "Priority"
    initial_backoff: float = 1.0
    max_backoff: float = 10.0
    # Write each decision's per-plugin scores into the pod's annotation at bind.
    score_annotation: bool = True


def _entries(raw: Any, where: str) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = []
    for item in raw or ():
        if isinstance(item, str):
            out.append((item, None))
        elif isinstance(item, Mapping) and "name" in item:
            w = item.get("weight")
            if w is not None and (not isinstance(w, int) or isinstance(w, bool)):
                raise ConfigError(
                    f"{where}: plugin {item['name']!r} has a non-integer weight {w!r}"
                )
            out.append((str(item["name"]), w))
        else:
            raise ConfigError(f"{where}: cannot read plugin entry {item!r}")
    return out


def _profile(raw: Mapping[str, Any], index: int, registry: Collection[str]) -> ProfileConfig:
    name = str(raw.get("schedulerName") or DEFAULT_SCHEDULER)
    where = f"profile {index} ({name})"
    plugins_raw = raw.get("plugins")
    disabled = {n for n, _ in _entries(raw.get("disabled"), where)}
    chosen: list[tuple[str, int | None]]
    if plugins_raw is None:
        chosen = [(n, None) for n, _ in DEFAULT_PLUGINS]
    elif isinstance(plugins_raw, Mapping):  # kube-scheduler's per-extension-point shape
        multi = plugins_raw.get("multiPoint") or {}
        disabled |= {n for n, _ in _entries(multi.get("disabled"), where)}
        base = [] if "*" in disabled else [(n, None) for n, _ in DEFAULT_PLUGINS]
        chosen = base + _entries(multi.get("enabled"), where)
        for point, section in plugins_raw.items():
            if point == "multiPoint" or not isinstance(section, Mapping):
                continue
            for n, w in _entries(section.get("enabled"), f"{where} {point}"):
                chosen.append((n, w))
    else:
        chosen = _entries(plugins_raw, where)
    args_by_name: dict[str, Mapping[str, Any]] = {}
    for pc in raw.get("pluginConfig") or ():
        args_by_name[str(pc.get("name"))] = pc.get("args") or {}
    defaults = dict(DEFAULT_PLUGINS)
    merged: dict[str, int] = {}
    for n, w in chosen:
        if n in disabled:
            continue
        if n not in registry:
            raise ConfigError(
                f"{where}: unknown plugin {n!r}; known plugins: {', '.join(sorted(registry))}"
            )
        weight = w if w is not None else merged.get(n, defaults.get(n, 1))
        if weight < 0:
            raise ConfigError(f"{where}: plugin {n!r} has negative weight {weight}")
        merged[n] = weight
    for n in args_by_name:
        if n not in registry:
            raise ConfigError(f"{where}: pluginConfig for unknown plugin {n!r}")
    pct = raw.get("percentageOfNodesToScore", 0)
    _check_pct(pct, where)
    return ProfileConfig(
        name,
        tuple(PluginSpec(n, w, args_by_name.get(n, {})) for n, w in merged.items()),
        int(pct or 0),
    )


def _check_pct(pct: Any, where: str) -> None:
    if pct is not None and (not isinstance(pct, int) or not 0 <= pct <= 100):
        raise ConfigError(
            f"{where}: percentageOfNodesToScore must be an integer 0..100, got {pct!r}"
        )


def parse(raw: Mapping[str, Any] | None, registry: Collection[str] = names.ALL) -> SchedulerConfig:
    """A validated configuration; `registry` is the plugin names known (a
    registry mapping works too: its keys)."""
    raw = raw or {}
    if not isinstance(raw, Mapping):
        raise ConfigError("the scheduler configuration must be a mapping")
    pct = raw.get("percentageOfNodesToScore", 0)
    _check_pct(pct, "configuration")
    profiles_raw = raw.get("profiles") or [{}]
    profiles = tuple(_profile(p, i, registry) for i, p in enumerate(profiles_raw))
    names = [p.scheduler_name for p in profiles]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise ConfigError(f"duplicate schedulerName in profiles: {', '.join(sorted(dupes))}")
    q = raw.get("queue") or {}
    order = q.get("order", "Priority")
    if order not in ("Priority", "DRF"):
        raise ConfigError(f"queue.order must be Priority or DRF, got {order!r}")
    initial, maximum = (
        float(q.get("initialBackoffSeconds", 1)),
        float(q.get("maxBackoffSeconds", 10)),
    )
    if initial <= 0 or maximum < initial:
        raise ConfigError(
            "queue backoff must satisfy 0 < initialBackoffSeconds <= maxBackoffSeconds"
        )
    annotate = raw.get("scoreAnnotation", True)
    if not isinstance(annotate, bool):
        raise ConfigError(f"scoreAnnotation must be true or false, got {annotate!r}")
    return SchedulerConfig(profiles, int(pct or 0), order, initial, maximum, annotate)


def load(text: str, registry: Collection[str] = names.ALL) -> SchedulerConfig:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"invalid YAML: {e}") from e
    return parse(raw, registry)
