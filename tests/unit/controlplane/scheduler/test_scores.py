"""Score plugins: expected scores computed by hand from kube-scheduler's formulas."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.scheduler.plugins import (
    balanced_allocation,
    image_locality,
    inter_pod_affinity,
    node_affinity,
    node_resources_fit,
    pod_topology_spread,
    selector_spread,
    taint_toleration,
)
from tests.fakes.scheduler_objects import make_node, make_pod

from .harness import plugin_handle, run_score

NO_HANDLE = plugin_handle()

Obj = dict[str, Any]
NODES = [make_node("n", cpu="4", memory="10000"), make_node("empty", cpu="4", memory="10000")]
EXISTING = [make_pod("e", cpu="1", memory="2000", node_name="n")]
POD = make_pod("p", cpu="2", memory="3000")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # cpu (4000-3000)*100/4000 = 25, memory (10000-5000)*100/10000 = 50 -> 37
        ({}, {"n": 37, "empty": 60}),
        # cpu 75, memory 50 -> 62; empty: 50, 30 -> 40
        ({"scoringStrategy": {"type": "MostAllocated"}}, {"n": 62, "empty": 40}),
        # cpu weighted 3: (25*3 + 50) / 4 = 31; empty (50*3 + 70) / 4 = 55
        (
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}],
                }
            },
            {"n": 31, "empty": 55},
        ),
        # bin-packing shape: utilisation itself, rounded half up: (75 + 50) / 2 = 62.5 -> 63
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                    },
                }
            },
            {"n": 63, "empty": 40},
        ),
    ],
)
def test_node_resources_fit_strategies(args: Obj, expected: dict[str, int]) -> None:
    assert run_score(node_resources_fit.new(args, NO_HANDLE), POD, NODES, EXISTING) == expected


def test_least_allocated_uses_non_zero_defaults() -> None:
    nodes = [make_node("n", cpu="1", memory="1Gi")]
    # 100m of 1000m used -> 90; 200Mi of 1024Mi -> (1024-200)*100/1024 = 80 -> 85
    assert run_score(node_resources_fit.NodeResourcesFit(), make_pod("p"), nodes) == {"n": 85}


def test_unknown_strategy_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown scoring strategy"):
        node_resources_fit.new({"scoringStrategy": {"type": "Random"}}, NO_HANDLE)


def test_balanced_allocation() -> None:
    # n: cpu 3/4 = .75, memory 5000/10000 = .5 -> std .125 -> 87; empty: .5, .3 -> 90
    assert run_score(balanced_allocation.BalancedAllocation(), POD, NODES, EXISTING) == {
        "n": 87,
        "empty": 90,
    }


def test_image_locality() -> None:
    mb = 1024 * 1024
    nodes = [
        make_node("a", images=[(["docker.io/nginx:1.0", "nginx:1.0"], 500 * mb)]),
        make_node("b"),
    ]
    pod = make_pod("p", image="nginx:1.0")
    # 500MB * (1 of 2 nodes) = 250MB -> 100 * (250 - 23) / (1000 - 23) = 23
    assert run_score(image_locality.ImageLocality(), pod, nodes) == {"a": 23, "b": 0}
    assert run_score(image_locality.ImageLocality(), make_pod("p", image="other"), nodes) == {
        "a": 0,
        "b": 0,
    }


def test_taint_toleration_prefer_no_schedule() -> None:
    soft = "PreferNoSchedule"
    nodes = [
        make_node("two", taints=[{"key": "a", "effect": soft}, {"key": "b", "effect": soft}]),
        make_node("one", taints=[{"key": "a", "effect": soft}]),
        make_node("none"),
    ]
    assert run_score(taint_toleration.TaintToleration(), make_pod("p"), nodes) == {
        "two": 0,
        "one": 50,
        "none": 100,
    }
    tolerant = make_pod("p", spec={"tolerations": [{"key": "b", "operator": "Exists"}]})
    assert run_score(taint_toleration.TaintToleration(), tolerant, nodes) == {
        "two": 0,
        "one": 0,
        "none": 100,
    }


TOPO = [
    make_node("a1", labels={"zone": "a", "disk": "ssd"}),
    make_node("a2", labels={"zone": "a"}),
    make_node("b1", labels={"zone": "b"}),
    make_node("nozone"),
]


def test_node_affinity_preferred() -> None:
    pod = make_pod(
        "p",
        spec={
            "affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 2,
                            "preference": {
                                "matchExpressions": [
                                    {"key": "zone", "operator": "In", "values": ["a"]}
                                ]
                            },
                        },
                        {
                            "weight": 5,
                            "preference": {
                                "matchExpressions": [{"key": "disk", "operator": "Exists"}]
                            },
                        },
                    ]
                }
            }
        },
    )
    # raw 7, 2, 0, 0 -> scaled to the maximum
    assert run_score(node_affinity.NodeAffinity(), pod, TOPO) == {
        "a1": 100,
        "a2": 28,
        "b1": 0,
        "nozone": 0,
    }


def _preferred(kind: str, weight: int) -> Obj:
    term = {
        "weight": weight,
        "podAffinityTerm": {
            "labelSelector": {"matchLabels": {"app": "cache"}},
            "topologyKey": "zone",
        },
    }
    return {"affinity": {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [term]}}}


def test_inter_pod_affinity_preferred() -> None:
    existing = [make_pod("cache", labels={"app": "cache"}, node_name="a2")]
    plugin = inter_pod_affinity.InterPodAffinity()
    near = make_pod("p", spec=_preferred("podAffinity", 10))
    assert run_score(plugin, near, TOPO, existing) == {"a1": 100, "a2": 100, "b1": 0, "nozone": 0}
    far = make_pod("p", spec=_preferred("podAntiAffinity", 10))
    assert run_score(plugin, far, TOPO, existing) == {"a1": 0, "a2": 0, "b1": 100, "nozone": 100}


def test_inter_pod_affinity_existing_pods_preferences_count() -> None:
    existing = [
        make_pod("x", labels={"app": "x"}, node_name="b1", spec=_preferred("podAffinity", 5))
    ]
    plugin = inter_pod_affinity.InterPodAffinity()
    got = run_score(plugin, make_pod("c", labels={"app": "cache"}), TOPO, existing)
    assert got == {"a1": 0, "a2": 0, "b1": 100, "nozone": 0}


def test_pod_topology_spread_score() -> None:
    existing = [make_pod(f"s{i}", labels={"app": "s"}, node_name="a1") for i in range(2)]
    pod = make_pod(
        "p",
        labels={"app": "s"},
        spec={
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": "s"}},
                }
            ]
        },
    )
    # zone a: 2 * log(2 + 2) = 2.77 -> 3; zone b: 0 -> inverted; nozone is ignored.
    assert run_score(pod_topology_spread.PodTopologySpread(), pod, TOPO, existing) == {
        "a1": 0,
        "a2": 0,
        "b1": 100,
        "nozone": 0,
    }


def test_selector_spread() -> None:
    owner = [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "rs",
            "uid": "rs-uid",
            "controller": True,
        }
    ]

    def owned(name: str, node: str | None = None) -> Obj:
        p = make_pod(name, node_name=node)
        p["metadata"]["ownerReferences"] = owner
        return p

    existing = [owned("x1", "a1"), owned("x2", "a1"), owned("x3", "b1")]
    got = run_score(selector_spread.SelectorSpread(), owned("new"), TOPO, existing)
    assert got == {"a1": 0, "a2": 100, "b1": 50, "nozone": 100}
