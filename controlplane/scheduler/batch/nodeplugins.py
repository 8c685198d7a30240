"""The batch scheduler's Framework: the filters and scores the configuration's plugins add.

Volcano's predicates and nodeorder plugins run the default scheduler's own
filters and scores; here they add them, by name, to one `NodePlugins` that
becomes the session's `Framework` (kube-scheduler's, built once):

- predicates (Point.PREDICATE) adds every filter, the volume plugins
  included; without it the Framework has NodeUnschedulable and
  NodeResourcesFit only;
- nodeorder (Point.NODE_ORDER) weighs the filters that also score, and
  BalancedAllocation and ImageLocality, with Volcano's nodeorder weights
  (its arguments `leastrequested.weight`, ..., else the defaults);
- binpack (Point.NODE_ORDER) adds its own score (binpack.py).

A plugin object added must be a Framework plugin of the point its adder
registered (`FilterPlugin` for PREDICATE, `ScorePlugin` for NODE_ORDER):
one whose method is misspelt is refused (`RegistrationError`), never
silently left out of the Framework. Every plugin registered for PREDICATE
adds its filters first, then the base filters come in if none did, then the
NODE_ORDER plugins add scores, each in the configuration's order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.api import volcano
from controlplane.scheduler import names
from controlplane.scheduler.batch.session import Point, RegistrationError
from controlplane.scheduler.framework import FilterPlugin, Framework, ProfilePlugin, ScorePlugin
from controlplane.scheduler.handle import NodeHandle
from controlplane.scheduler.registry import NODE_REGISTRY, NodeFactory

FILTERS = (
    names.NODE_UNSCHEDULABLE, names.NODE_NAME, names.TAINT_TOLERATION, names.NODE_AFFINITY,
    names.NODE_PORTS, names.NODE_RESOURCES_FIT, names.NODE_CONDITIONS,
    names.VOLUME_RESTRICTIONS, names.NODE_VOLUME_LIMITS, names.VOLUME_BINDING, names.VOLUME_ZONE,
    names.POD_TOPOLOGY_SPREAD, names.INTER_POD_AFFINITY,
)  # fmt: skip
BASE_FILTERS = (names.NODE_UNSCHEDULABLE, names.NODE_RESOURCES_FIT)
SCORES = (names.BALANCED_ALLOCATION, names.IMAGE_LOCALITY)
DEFAULT_WEIGHTS = dict(names.DEFAULT_PLUGINS)

_KINDS: Mapping[Point, type] = {Point.PREDICATE: FilterPlugin, Point.NODE_ORDER: ScorePlugin}


class NodePlugins:
    """The Framework's plugins in order, each with its score weight (0: it does not score)."""

    def __init__(
        self, handle: NodeHandle, registry: Mapping[str, NodeFactory] = NODE_REGISTRY
    ) -> None:
        self.handle = handle
        self.registry = registry
        self._plugins: dict[str, ProfilePlugin] = {}

    def adder(self, plugin: str, points: frozenset[Point]) -> NodeAdder:
        return NodeAdder(self, plugin, points)

    def filters(self) -> list[str]:
        return [n for n, p in self._plugins.items() if isinstance(p.plugin, FilterPlugin)]

    def _get(self, name: str) -> ProfilePlugin:
        known = self._plugins.get(name)
        if known is None:
            known = self._plugins[name] = ProfilePlugin(self.registry[name]({}, self.handle), 0)
        return known

    def filters_added(self) -> None:
        """Every filter is in: without any (no predicates), the base ones."""
        if not self.filters():
            for name in BASE_FILTERS:
                self._get(name)

    def framework(self) -> Framework:
        return Framework(
            volcano.SCHEDULER_NAME, list(self._plugins.values()), record_breakdown=False
        )


class NodeAdder:
    """What one plugin may add to the Framework, at the points it registered."""

    def __init__(self, plugins: NodePlugins, plugin: str, points: frozenset[Point]) -> None:
        self._plugins = plugins
        self._plugin = plugin
        self._points = points

    def _check(self, point: Point, obj: Any) -> None:
        if point not in self._points:
            raise RegistrationError(f"plugin {self._plugin!r} adds a {point.value} plugin "
                                    "but did not register that point")  # fmt: skip
        if not isinstance(obj, _KINDS[point]):
            raise RegistrationError(
                f"plugin {self._plugin!r}: {type(obj).__name__} is no {point.value} plugin "
                f"(it implements no {_KINDS[point].__name__} method)"
            )

    def filter(self, name: str) -> None:
        """The default scheduler's filter `name` (scoring with weight 0 until weighed)."""
        self._check(Point.PREDICATE, self._plugins._get(name).plugin)

    def scoring_filters(self) -> list[str]:
        """The filters (all added by now) that also score."""
        return [
            n
            for n in self._plugins.filters()
            if isinstance(self._plugins._get(n).plugin, ScorePlugin)
        ]

    def score(self, name: str, weight: int, args: dict[str, Any] | None = None) -> None:
        """The default scheduler's plugin `name` scores with `weight` (built
        again with `args` when given: its scoring strategy, say)."""
        p = self._plugins._get(name)
        if args is not None:
            p.plugin = self._plugins.registry[name](args, self._plugins.handle)
        self._check(Point.NODE_ORDER, p.plugin)
        p.weight = weight

    def plugin(self, obj: Any, weight: int) -> None:
        """A plugin object of this plugin's own (binpack's score), with its weight."""
        self._check(Point.NODE_ORDER, obj)
        self._plugins._plugins[obj.name] = ProfilePlugin(obj, weight)
