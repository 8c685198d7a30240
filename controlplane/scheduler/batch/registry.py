"""Actions and plugins by name, as Volcano's framework registers them.

A `Registry` is a plain map from name to what to run (Volcano's
`RegisterAction` and `RegisterPluginBuilder`):

- an action: `execute(session)`, run in the configuration's order;
- a plugin: the extension points it implements (`Point`, at least one, or
  `RegistrationError`) and its builders: `on_open(extensions, option)` when a
  session opens (it adds its functions at its session points through
  `Extensions`), `build(adder, option)` once, when the Framework is built
  (it adds filters or scores through `NodeAdder`). Adding at a point it did
  not register is a `RegistrationError` too, so a plugin's declaration is
  always what it does.

`check(conf)` refuses a configuration naming an action the registry does
not know (`ConfError` with the line) and leaves out, with a warning, a
plugin it does not know. builtin.py registers skiff's own.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from controlplane.scheduler.batch.conf import Conf, ConfError, PluginOption
from controlplane.scheduler.batch.nodeplugins import NodeAdder, NodePlugins
from controlplane.scheduler.batch.session import (
    FRAMEWORK_POINTS,
    SESSION_POINTS,
    Extensions,
    Point,
    RegistrationError,
    Session,
)
from controlplane.scheduler.framework import Framework
from controlplane.scheduler.handle import NodeHandle

log = logging.getLogger("skiff.scheduler.batch")

Opener = Callable[[Extensions, PluginOption], None]
Builder = Callable[[NodeAdder, PluginOption], None]
Action = Callable[[Session], None]


@dataclass(frozen=True)
class PluginSpec:
    name: str
    points: frozenset[Point]
    on_open: Opener | None = None
    build: Builder | None = None


class Registry:
    def __init__(self) -> None:
        self._plugins: dict[str, PluginSpec] = {}
        self._actions: dict[str, Action] = {}

    def register_action(self, name: str, execute: Action) -> None:
        if name in self._actions:
            raise RegistrationError(f"action {name!r} is registered twice")
        self._actions[name] = execute

    def register_plugin(
        self,
        name: str,
        points: Collection[Point],
        *,
        on_open: Opener | None = None,
        build: Builder | None = None,
    ) -> None:
        pts = frozenset(points)
        if not pts:
            raise RegistrationError(f"plugin {name!r} implements no extension point")
        if name in self._plugins:
            raise RegistrationError(f"plugin {name!r} is registered twice")
        if (pts & SESSION_POINTS) and on_open is None:
            raise RegistrationError(f"plugin {name!r} registers session points but no on_open")
        if (pts & FRAMEWORK_POINTS) and build is None:
            raise RegistrationError(f"plugin {name!r} registers Framework points but no build")
        if on_open is not None and not pts & SESSION_POINTS:
            raise RegistrationError(f"plugin {name!r} has an on_open but no session point")
        if build is not None and not pts & FRAMEWORK_POINTS:
            raise RegistrationError(f"plugin {name!r} has a build but no Framework point")
        self._plugins[name] = PluginSpec(name, pts, on_open, build)

    @property
    def actions(self) -> Mapping[str, Action]:
        return self._actions

    @property
    def plugins(self) -> Mapping[str, PluginSpec]:
        return self._plugins

    def check(self, conf: Conf) -> Conf:
        """The configuration with only registered plugins: an unknown action is
        refused (`ConfError`), an unknown plugin is logged and left out, as
        Volcano's scheduler does ("failed to find Action", "Failed to get
        plugin"), so that its own configurations load as they stand."""
        for name in conf.actions:
            if name not in self._actions:
                raise ConfError(f"line {conf.actions_line}: unknown action {name!r}; "
                                f"known: {', '.join(self._actions)}")  # fmt: skip
        tiers = []
        for tier in conf.tiers:
            known = []
            for opt in tier:
                if opt.name in self._plugins:
                    known.append(opt)
                else:
                    log.warning("volcano-scheduler.conf line %d: plugin %r is not built in "
                                "(known: %s): skipped", opt.line, opt.name,
                                ", ".join(self._plugins))  # fmt: skip
            tiers.append(tuple(known))
        return dataclasses.replace(conf, tiers=tuple(tiers))

    def framework(self, conf: Conf, handle: NodeHandle) -> Framework:
        """The Framework of the configuration's filter and score plugins."""
        plugins = NodePlugins(handle)
        specs = [(self._plugins[o.name], o) for tier in conf.tiers for o in tier]
        builds = [(b, s, o) for s, o in specs if (b := s.build) is not None]
        for build, spec, opt in builds:
            if Point.PREDICATE in spec.points:
                build(plugins.adder(spec.name, spec.points), opt)
        plugins.filters_added()
        for build, spec, opt in builds:
            if Point.PREDICATE not in spec.points:
                build(plugins.adder(spec.name, spec.points), opt)
        return plugins.framework()

    def open_session(self, ssn: Session, conf: Conf) -> None:
        """Each plugin of the configuration adds its functions, tier by tier."""
        for tier in conf.tiers:
            ssn.open_tier()
            for opt in tier:
                spec = self._plugins[opt.name]
                if spec.on_open is not None:
                    spec.on_open(ssn.extensions(spec.name, spec.points), opt)

    def run_actions(self, ssn: Session, conf: Conf) -> None:
        for name in conf.actions:
            self._actions[name](ssn)
