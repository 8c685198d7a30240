"""Actions and plugins are registered by name and extension point (Volcano's
framework: RegisterAction, RegisterPluginBuilder); a plugin whose declaration
and behaviour disagree is refused, never silently dropped."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.scheduler.batch import builtin, conf
from controlplane.scheduler.batch.conf import PluginOption
from controlplane.scheduler.batch.nodeplugins import NodeAdder
from controlplane.scheduler.batch.registry import Registry
from controlplane.scheduler.batch.scheduler import BatchScheduler
from controlplane.scheduler.batch.session import Extensions, Point, RegistrationError, Session

from .harness import Cluster, Env

CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: mine
"""


def _with(name: str, points: tuple[Point, ...], **builders: Any) -> Registry:
    r = builtin.registry()
    r.register_plugin(name, points, **builders)
    return r


def test_a_plugin_that_implements_no_extension_point_is_refused() -> None:
    with pytest.raises(RegistrationError, match="'mine' implements no extension point"):
        _with("mine", (), on_open=lambda ext, opt: None)


def test_a_plugin_or_action_registered_twice_is_refused() -> None:
    r = builtin.registry()
    with pytest.raises(RegistrationError, match="'gang' is registered twice"):
        r.register_plugin("gang", (Point.JOB_READY,), on_open=lambda ext, opt: None)
    with pytest.raises(RegistrationError, match="'allocate' is registered twice"):
        r.register_action("allocate", lambda ssn: None)


def test_a_plugin_adding_at_a_point_it_did_not_register_is_refused() -> None:
    def sneaky(ext: Extensions, opt: PluginOption) -> None:
        ext.job_ready(lambda job: True)  # registered job order only

    r = _with("mine", (Point.JOB_ORDER,), on_open=sneaky)
    env = Env()
    sched = BatchScheduler(conf.load(CONF), env.cluster, registry=r)
    with pytest.raises(RegistrationError, match="'mine' adds a jobReady function"):
        sched.run_session()


def test_a_framework_plugin_with_a_misspelt_method_is_refused() -> None:
    """binpack's score object with `scroe` instead of `score` would be no
    ScorePlugin: the Framework would leave it out without a word."""

    class Misspelt:
        name = "Misspelt"

        def scroe(self, *args: Any) -> Any: ...

    def build(node: NodeAdder, opt: PluginOption) -> None:
        node.plugin(Misspelt(), 1)

    r = _with("mine", (Point.NODE_ORDER,), build=build)
    with pytest.raises(RegistrationError, match="Misspelt is no nodeOrder plugin"):
        BatchScheduler(conf.load(CONF), Cluster(), registry=r)


def test_builders_must_match_the_points() -> None:
    with pytest.raises(RegistrationError, match="session points but no on_open"):
        _with("mine", (Point.JOB_ORDER,), build=lambda node, opt: None)
    with pytest.raises(RegistrationError, match="Framework points but no build"):
        _with("mine", (Point.PREDICATE,), on_open=lambda ext, opt: None)


def test_registered_plugins_and_actions_run_by_name() -> None:
    """A plugin's functions count at the point it registered, and an action
    runs because the configuration names it, not because of its name's spelling
    in an if/elif chain."""
    seen: list[str] = []

    def never_ready(ext: Extensions, opt: PluginOption) -> None:
        ext.job_ready(lambda job: False)

    def audit(ssn: Session) -> None:
        seen.extend(sorted(ssn.jobs))

    r = _with("mine", (Point.JOB_READY,), on_open=never_ready)
    r.register_action("audit", audit)
    env = Env()
    env.sched = env.cluster.sched = BatchScheduler(
        conf.load(CONF.replace("enqueue, allocate", "enqueue, allocate, audit")),
        env.cluster,
        registry=r,
    )
    env.queue("default")
    env.nodes(2)
    env.job("a", 2)
    env.run(2)
    assert not env.bound("a")  # never ready: the gang is never committed
    assert "default/a" in seen


def test_an_unknown_action_is_refused_an_unknown_plugin_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with pytest.raises(conf.ConfError, match=r"^line 2: unknown action 'audit'"):
        BatchScheduler(conf.load('\nactions: "audit"\n'), Cluster())
    sched = BatchScheduler(conf.load(CONF), Cluster())
    assert "line 6: plugin 'mine' is not built in" in caplog.text
    assert [p.name for p in sched.driver.conf.tiers[0]] == ["gang"]


def test_every_builtin_plugin_adds_only_at_its_registered_points() -> None:
    """Every switch on: each built-in plugin's functions land where it said."""
    every = "\n".join(f"  - name: {n}" for n in builtin.REGISTRY.plugins)
    c = builtin.load(f'actions: "enqueue, allocate, preempt, reclaim, backfill"\n'
                     f"tiers:\n- plugins:\n{every}\n")  # fmt: skip
    env = Env()
    sched = BatchScheduler(c, env.cluster)
    env.cluster.sched = sched
    sched.run_session()  # raises RegistrationError otherwise
    fw = sched.framework
    assert fw.plugin("BinPack") in fw.scorers and fw.plugin("VolumeBinding") in fw.filters
