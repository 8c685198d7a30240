"""The vectorised filters against a plain per-node reference, on random clusters."""

from __future__ import annotations

import random
from typing import Any

from controlplane.scheduler import config, resources
from controlplane.scheduler.podinfo import PodInfo
from controlplane.scheduler.scheduler import from_config
from controlplane.scheduler.types import CycleState
from tests.fakes.scheduler_cluster import InMemoryCluster
from tests.fakes.scheduler_objects import make_node, make_pod

from .harness import cache_of

Obj = dict[str, Any]
ZONES = ["a", "b", "c"]
TAINTS = [
    {"key": "gpu", "value": "yes", "effect": "NoSchedule"},
    {"key": "spot", "value": "", "effect": "NoExecute"},
]


def reference_fits(pod: Obj, node: Obj, pods_on_node: list[Obj]) -> bool:
    req = resources.pod_requests(pod)
    alloc = resources.resource_list(node["status"]["allocatable"])
    used: dict[str, int] = {}
    for p in pods_on_node:
        for k, v in resources.pod_requests(p).items():
            used[k] = used.get(k, 0) + v
    if len(pods_on_node) + 1 > alloc["pods"]:
        return False
    if any(alloc.get(k, 0) - used.get(k, 0) < v for k, v in req.items()):
        return False
    labels = node["metadata"]["labels"]
    if any(labels.get(k) != v for k, v in (pod["spec"].get("nodeSelector") or {}).items()):
        return False
    tolerations = pod["spec"].get("tolerations") or []
    for t in node["spec"].get("taints") or []:
        if not any(
            tol.get("key") == t["key"] and tol.get("operator") == "Exists" for tol in tolerations
        ):
            return False
    return not node["spec"].get("unschedulable")


def test_random_clusters_match_reference() -> None:
    rng = random.Random(7)
    fw = from_config(config.parse(None), InMemoryCluster()).profiles["default-scheduler"]
    for _ in range(30):
        nodes = []
        for i in range(rng.randint(1, 40)):
            taints = [t for t in TAINTS if rng.random() < 0.2]
            labels = {"zone": rng.choice(ZONES)} if rng.random() < 0.8 else {}
            nodes.append(
                make_node(
                    f"n{i}",
                    cpu=str(rng.randint(1, 8)),
                    memory=f"{rng.randint(1, 16)}Gi",
                    pods=str(rng.randint(1, 6)),
                    labels=labels,
                    taints=taints,
                    unschedulable=rng.random() < 0.1,
                )
            )
        existing: dict[str, list[Obj]] = {n["metadata"]["name"]: [] for n in nodes}
        placed = []
        for j in range(rng.randint(0, 60)):
            node = rng.choice(nodes)["metadata"]["name"]
            p = make_pod(
                f"e{j}",
                cpu=f"{rng.randint(1, 20) * 100}m",
                memory=f"{rng.randint(1, 8) * 256}Mi",
                node_name=node,
            )
            existing[node].append(p)
            placed.append(p)
        cache = cache_of(nodes, placed)
        for k in range(10):
            spec: Obj = {}
            if rng.random() < 0.3:
                spec["nodeSelector"] = {"zone": rng.choice(ZONES)}
            if rng.random() < 0.3:
                spec["tolerations"] = [
                    {"key": t["key"], "operator": "Exists"} for t in TAINTS if rng.random() < 0.6
                ]
            pod = make_pod(
                f"p{k}",
                cpu=f"{rng.randint(1, 40) * 100}m",
                memory=f"{rng.randint(1, 16) * 256}Mi",
                spec=spec,
            )
            info = PodInfo.of(pod)
            state = CycleState()
            assert fw.run_pre_filter(state, info, cache).ok
            got = {
                cache.slot_names[int(s)]
                for s in fw.run_filters(state, info, cache, cache.valid_slots(), None)
            }
            want = {
                n["metadata"]["name"]
                for n in nodes
                if reference_fits(pod, n, existing[n["metadata"]["name"]])
            }
            assert got == want, (pod, got ^ want)
