"""Profiles from YAML: defaults, choices, weights and refusals with reasons."""

from __future__ import annotations

import pytest

from controlplane.scheduler import config
from controlplane.scheduler.framework import Framework, num_feasible_nodes_to_find
from controlplane.scheduler.plugins.node_resources_fit import NodeResourcesFit
from controlplane.scheduler.scheduler import from_config
from tests.fakes.scheduler_cluster import InMemoryCluster


def build(cfg: config.SchedulerConfig) -> dict[str, Framework]:
    """The profiles a scheduler builds from `cfg` (plugins get its handle)."""
    return from_config(cfg, InMemoryCluster()).profiles


def test_default_profile() -> None:
    fws = build(config.parse(None))
    fw = fws["default-scheduler"]
    assert [p.name for p in fw.filters][:3] == ["NodeUnschedulable", "NodeName", "TaintToleration"]
    assert fw.weights["TaintToleration"] == 3 and fw.weights["NodeResourcesFit"] == 1


def test_yaml_profiles_choose_plugins_weights_and_args() -> None:
    text = """
percentageOfNodesToScore: 30
queue: {order: DRF}
profiles:
- schedulerName: default-scheduler
  disabled: [ImageLocality]
- schedulerName: binpack
  plugins:
  - NodeResourcesFit
  - {name: NodeResourcesBalancedAllocation, weight: 4}
  - DefaultBinder
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
"""
    cfg = config.load(text)
    assert cfg.queue_order == "DRF"
    fws = build(cfg)
    assert set(fws) == {"default-scheduler", "binpack"}
    assert fws["default-scheduler"].plugin("ImageLocality") is None
    assert fws["binpack"].percentage == 30
    fit = fws["binpack"].plugin("NodeResourcesFit")
    assert isinstance(fit, NodeResourcesFit) and fit.strategy == "MostAllocated"
    assert fws["binpack"].weights["NodeResourcesBalancedAllocation"] == 4


def test_kube_shaped_plugins_section() -> None:
    cfg = config.parse(
        {
            "profiles": [
                {
                    "schedulerName": "s",
                    "plugins": {
                        "multiPoint": {"disabled": [{"name": "ImageLocality"}]},
                        "score": {"enabled": [{"name": "SelectorSpread", "weight": 2}]},
                    },
                }
            ]
        }
    )
    names = {p.name for p in cfg.profiles[0].plugins}
    assert "SelectorSpread" in names and "ImageLocality" not in names


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ({"profiles": [{"plugins": ["NoSuchPlugin"]}]}, "unknown plugin 'NoSuchPlugin'"),
        (
            {"profiles": [{"plugins": [{"name": "NodeResourcesFit", "weight": -1}]}]},
            "negative weight -1",
        ),
        ({"profiles": [{}, {}]}, "duplicate schedulerName"),
        ({"percentageOfNodesToScore": 150}, "percentageOfNodesToScore"),
        ({"queue": {"order": "Random"}}, "queue.order"),
        ({"profiles": [{"pluginConfig": [{"name": "Nope", "args": {}}]}]}, "unknown plugin 'Nope'"),
    ],
)
def test_refusals_say_why(raw: dict[str, object], reason: str) -> None:
    with pytest.raises(config.ConfigError, match=reason):
        config.parse(raw)


def test_bad_plugin_args_are_refused_at_build() -> None:
    cfg = config.parse(
        {
            "profiles": [
                {
                    "pluginConfig": [
                        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "X"}}}
                    ]
                }
            ]
        }
    )
    with pytest.raises(config.ConfigError, match="unknown scoring strategy"):
        build(cfg)


def test_bad_yaml() -> None:
    with pytest.raises(config.ConfigError, match="invalid YAML"):
        config.load("profiles: [")


@pytest.mark.parametrize(
    ("nodes", "pct", "expected"),
    [
        (50, 0, 50),
        (100, 0, 100),
        (1000, 0, 420),  # 50 - 1000/125 = 42%
        (5000, 0, 500),  # 10%
        (6000, 0, 300),  # 50 - 48 = 2% -> at least 5%
        (5000, 1, 100),  # never fewer than 100
        (5000, 100, 5000),
        (5000, 20, 1000),
    ],
)
def test_num_feasible_nodes_to_find(nodes: int, pct: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(nodes, pct) == expected
