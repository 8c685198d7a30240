"""Filter plugins: tables of pod/node cases with the expected rejections."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.scheduler.plugins import (
    inter_pod_affinity,
    node_affinity,
    node_conditions,
    node_name,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    pod_topology_spread,
    taint_toleration,
)
from tests.fakes.scheduler_objects import make_node, make_pod

from .harness import run_filter

Obj = dict[str, Any]


def spec(**kw: Any) -> Obj:
    return kw


def test_node_unschedulable() -> None:
    nodes = [make_node("a"), make_node("b", unschedulable=True)]
    plugin = node_unschedulable.NodeUnschedulable()
    assert run_filter(plugin, make_pod("p"), nodes) == {
        "a": (),
        "b": ("node(s) were unschedulable",),
    }
    tolerant = make_pod(
        "p",
        spec={
            "tolerations": [
                {
                    "key": "node.kubernetes.io/unschedulable",
                    "operator": "Exists",
                    "effect": "NoSchedule",
                }
            ]
        },
    )
    assert run_filter(plugin, tolerant, nodes) == {"a": (), "b": ()}


def test_node_name() -> None:
    nodes = [make_node("a"), make_node("b")]
    plugin = node_name.NodeName()
    assert run_filter(plugin, make_pod("p"), nodes) == {"a": (), "b": ()}
    pod = make_pod("p", spec={"nodeName": "b"})
    assert run_filter(plugin, pod, nodes) == {
        "a": ("node(s) didn't match the requested node name",),
        "b": (),
    }


def test_node_ports() -> None:
    def with_port(
        name: str, port: int, node: str | None = None, ip: str = "", proto: str = "TCP"
    ) -> Obj:
        p = make_pod(name, node_name=node)
        p["spec"]["containers"][0]["ports"] = [
            {"containerPort": 80, "hostPort": port, "hostIP": ip, "protocol": proto}
        ]
        return p

    nodes = [make_node("a"), make_node("b"), make_node("c")]
    existing = [
        with_port("x", 8080, "a"),
        with_port("y", 8080, "b", ip="10.0.0.1"),
        with_port("z", 8080, "c", proto="UDP"),
    ]
    reason = ("node(s) didn't have free ports for the requested pod ports",)
    plugin = node_ports.NodePorts()
    assert run_filter(plugin, with_port("p", 8080), nodes, existing) == {
        "a": reason,
        "b": reason,
        "c": (),
    }
    assert run_filter(plugin, with_port("p", 8080, ip="10.0.0.2"), nodes, existing) == {
        "a": reason,
        "b": (),
        "c": (),
    }
    assert run_filter(plugin, with_port("p", 9090), nodes, existing) == {"a": (), "b": (), "c": ()}


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (
            make_pod("p", cpu="1", memory="1Gi"),
            {"small": (), "big": (), "full": ("Too many pods",)},
        ),
        (
            make_pod("p", cpu="3"),
            {
                "small": ("Insufficient cpu",),
                "big": (),
                "full": ("Too many pods", "Insufficient cpu"),
            },
        ),
        (
            make_pod("p", cpu="3", memory="6Gi"),
            {
                "small": ("Insufficient cpu", "Insufficient memory"),
                "big": (),
                "full": ("Too many pods", "Insufficient cpu", "Insufficient memory"),
            },
        ),
        (
            make_pod("p", requests={"nvidia.com/gpu": "1"}),
            {
                "small": ("Insufficient nvidia.com/gpu",),
                "big": (),
                "full": ("Too many pods", "Insufficient nvidia.com/gpu"),
            },
        ),
        (
            make_pod("p", requests={"ephemeral-storage": "200Gi"}),
            {
                "small": ("Insufficient ephemeral-storage",),
                "big": ("Insufficient ephemeral-storage",),
                "full": ("Too many pods", "Insufficient ephemeral-storage"),
            },
        ),
    ],
)
def test_node_resources_fit(pod: Obj, expected: dict[str, tuple[str, ...]]) -> None:
    nodes = [
        make_node("small", cpu="2", memory="4Gi"),
        make_node("big", cpu="8", memory="16Gi", extra={"nvidia.com/gpu": "2"}),
        make_node("full", cpu="2", memory="4Gi", pods="1"),
    ]
    existing = [
        make_pod("e1", cpu="500m", memory="1Gi", node_name="small"),
        make_pod("e2", node_name="full"),
    ]
    assert run_filter(node_resources_fit.NodeResourcesFit(), pod, nodes, existing) == expected


def test_node_resources_fit_counts_init_containers() -> None:
    pod = make_pod("p", cpu="100m")
    pod["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": "3"}}}]
    nodes = [make_node("a", cpu="2"), make_node("b", cpu="4")]
    assert run_filter(node_resources_fit.NodeResourcesFit(), pod, nodes) == {
        "a": ("Insufficient cpu",),
        "b": (),
    }


def _affinity(terms: list[Obj]) -> Obj:
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
            }
        }
    }


ZONES = [
    make_node("a", labels={"zone": "z1", "disk": "ssd", "cores": "8"}),
    make_node("b", labels={"zone": "z2", "cores": "16"}),
    make_node("c", labels={"zone": "z3", "cores": "x"}),
]
NA = "node(s) didn't match Pod's node affinity/selector"


@pytest.mark.parametrize(
    ("pod_spec", "passing"),
    [
        ({}, {"a", "b", "c"}),
        ({"nodeSelector": {"zone": "z1"}}, {"a"}),
        ({"nodeSelector": {"zone": "nowhere"}}, set()),
        (
            _affinity(
                [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1", "z2"]}]}]
            ),
            {"a", "b"},
        ),
        (
            _affinity(
                [{"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z1"]}]}]
            ),
            {"b", "c"},
        ),
        (_affinity([{"matchExpressions": [{"key": "disk", "operator": "Exists"}]}]), {"a"}),
        (
            _affinity([{"matchExpressions": [{"key": "disk", "operator": "DoesNotExist"}]}]),
            {"b", "c"},
        ),
        (
            _affinity(
                [{"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["10"]}]}]
            ),
            {"b"},
        ),
        (
            _affinity(
                [{"matchExpressions": [{"key": "cores", "operator": "Lt", "values": ["10"]}]}]
            ),
            {"a"},
        ),
        (
            _affinity(
                [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z3"]}]},
                    {"matchExpressions": [{"key": "disk", "operator": "Exists"}]},
                ]
            ),
            {"a", "c"},
        ),
        (
            _affinity(
                [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]}]
            ),
            {"b"},
        ),
        (_affinity([{}]), set()),
        (_affinity([]), set()),
        (
            {
                "nodeSelector": {"zone": "z1"},
                **_affinity(
                    [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2"]}]}]
                ),
            },
            set(),
        ),
    ],
)
def test_node_affinity(pod_spec: Obj, passing: set[str]) -> None:
    got = run_filter(node_affinity.NodeAffinity(), make_pod("p", spec=pod_spec), ZONES)
    assert {n for n, r in got.items() if not r} == passing
    assert all(r == (NA,) for n, r in got.items() if n not in passing)


def test_taint_toleration() -> None:
    nodes = [
        make_node("clean"),
        make_node("gpu", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        make_node(
            "soft", taints=[{"key": "dedicated", "value": "gpu", "effect": "PreferNoSchedule"}]
        ),
        make_node("evict", taints=[{"key": "flaky", "effect": "NoExecute"}]),
    ]
    plugin = taint_toleration.TaintToleration()
    got = run_filter(plugin, make_pod("p"), nodes)
    assert got == {
        "clean": (),
        "gpu": ("node(s) had untolerated taint {dedicated: gpu}",),
        "soft": (),
        "evict": ("node(s) had untolerated taint {flaky: }",),
    }
    tolerant = make_pod(
        "p",
        spec={
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
                {"key": "flaky", "operator": "Exists"},
            ]
        },
    )
    assert all(r == () for r in run_filter(plugin, tolerant, nodes).values())
    wrong_value = make_pod(
        "p", spec={"tolerations": [{"key": "dedicated", "value": "cpu", "effect": "NoSchedule"}]}
    )
    assert run_filter(plugin, wrong_value, nodes)["gpu"] != ()
    everything = make_pod("p", spec={"tolerations": [{"operator": "Exists"}]})
    assert all(r == () for r in run_filter(plugin, everything, nodes).values())


def test_node_conditions() -> None:
    nodes = [
        make_node("ok"),
        make_node("down", conditions={"Ready": "False"}),
        make_node("mem", conditions={"Ready": "True", "MemoryPressure": "True"}),
        make_node("disk", conditions={"Ready": "True", "DiskPressure": "True"}),
        make_node("pid", conditions={"Ready": "True", "PIDPressure": "True"}),
    ]
    plugin = node_conditions.NodeConditions()
    best_effort = run_filter(plugin, make_pod("p"), nodes)
    assert best_effort == {
        "ok": (),
        "down": ("node(s) were not ready",),
        "mem": ("node(s) had memory pressure",),
        "disk": ("node(s) had disk pressure",),
        "pid": ("node(s) had pid pressure",),
    }
    burstable = run_filter(plugin, make_pod("p", cpu="100m"), nodes)
    assert burstable["mem"] == ()


def _anti(selector: Obj, key: str = "kubernetes.io/hostname") -> Obj:
    return {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": selector}, "topologyKey": key}
                ]
            }
        }
    }


def _aff(selector: Obj, key: str = "zone") -> Obj:
    return {
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": selector}, "topologyKey": key}
                ]
            }
        }
    }


TOPO = [
    make_node("a1", labels={"zone": "a"}),
    make_node("a2", labels={"zone": "a"}),
    make_node("b1", labels={"zone": "b"}),
    make_node("nozone"),
]


def test_inter_pod_anti_affinity() -> None:
    plugin = inter_pod_affinity.InterPodAffinity()
    existing = [make_pod("web-1", labels={"app": "web"}, node_name="a1")]
    got = run_filter(
        plugin, make_pod("web-2", labels={"app": "web"}, spec=_anti({"app": "web"})), TOPO, existing
    )
    assert got == {"a1": (inter_pod_affinity.R_ANTI,), "a2": (), "b1": (), "nozone": ()}
    got = run_filter(
        plugin,
        make_pod("web-2", labels={"app": "web"}, spec=_anti({"app": "web"}, "zone")),
        TOPO,
        existing,
    )
    assert got == {
        "a1": (inter_pod_affinity.R_ANTI,),
        "a2": (inter_pod_affinity.R_ANTI,),
        "b1": (),
        "nozone": (),
    }
    # Other namespaces do not count.
    got = run_filter(
        plugin,
        make_pod("w", namespace="other", labels={"app": "web"}, spec=_anti({"app": "web"})),
        TOPO,
        existing,
    )
    assert got["a1"] == ()


def test_existing_pods_anti_affinity_is_symmetric() -> None:
    plugin = inter_pod_affinity.InterPodAffinity()
    existing = [
        make_pod("db", labels={"app": "db"}, node_name="b1", spec=_anti({"app": "web"}, "zone"))
    ]
    got = run_filter(plugin, make_pod("web", labels={"app": "web"}), TOPO, existing)
    assert got == {"a1": (), "a2": (), "b1": (inter_pod_affinity.R_EXISTING_ANTI,), "nozone": ()}
    assert all(
        r == ()
        for r in run_filter(plugin, make_pod("other", labels={"app": "x"}), TOPO, existing).values()
    )


def test_inter_pod_affinity() -> None:
    plugin = inter_pod_affinity.InterPodAffinity()
    existing = [make_pod("cache", labels={"app": "cache"}, node_name="a2")]
    got = run_filter(plugin, make_pod("web", spec=_aff({"app": "cache"})), TOPO, existing)
    assert got == {
        "a1": (),
        "a2": (),
        "b1": (inter_pod_affinity.R_AFFINITY,),
        "nozone": (inter_pod_affinity.R_AFFINITY,),
    }
    # Nothing matches anywhere and the pod does not match itself: nowhere.
    got = run_filter(plugin, make_pod("web", spec=_aff({"app": "nothing"})), TOPO, existing)
    assert all(r == (inter_pod_affinity.R_AFFINITY,) for r in got.values())
    # The first pod of a self-affine group may go to any node with the topology key.
    got = run_filter(
        plugin, make_pod("g", labels={"app": "g"}, spec=_aff({"app": "g"})), TOPO, existing
    )
    assert got == {"a1": (), "a2": (), "b1": (), "nozone": (inter_pod_affinity.R_AFFINITY,)}


def _spread(max_skew: int, key: str = "zone", when: str = "DoNotSchedule") -> Obj:
    return {
        "topologySpreadConstraints": [
            {
                "maxSkew": max_skew,
                "topologyKey": key,
                "whenUnsatisfiable": when,
                "labelSelector": {"matchLabels": {"app": "s"}},
            }
        ]
    }


def test_pod_topology_spread_filter() -> None:
    plugin = pod_topology_spread.PodTopologySpread()
    existing = [make_pod(f"s{i}", labels={"app": "s"}, node_name="a1") for i in range(2)]
    pod = make_pod("new", labels={"app": "s"}, spec=_spread(1))
    got = run_filter(plugin, pod, TOPO, existing)
    # zone a has 2, zone b has 0: only b keeps the skew within 1.
    assert got == {
        "a1": (pod_topology_spread.R_SKEW,),
        "a2": (pod_topology_spread.R_SKEW,),
        "b1": (),
        "nozone": (pod_topology_spread.R_LABEL,),
    }
    relaxed = make_pod("new", labels={"app": "s"}, spec=_spread(3))
    assert run_filter(plugin, relaxed, TOPO, existing)["a1"] == ()
    soft = make_pod("new", labels={"app": "s"}, spec=_spread(1, when="ScheduleAnyway"))
    assert all(r == () for r in run_filter(plugin, soft, TOPO, existing).values())


def test_pod_topology_spread_respects_node_affinity_when_counting() -> None:
    plugin = pod_topology_spread.PodTopologySpread()
    existing = [make_pod("s0", labels={"app": "s"}, node_name="a1")]
    pod_spec = _spread(1)
    pod_spec["nodeSelector"] = {"zone": "a"}
    # Zone b is not eligible for this pod, so it is not the minimum: a1/a2 fit.
    got = run_filter(plugin, make_pod("new", labels={"app": "s"}, spec=pod_spec), TOPO, existing)
    assert got["a1"] == () and got["a2"] == ()
