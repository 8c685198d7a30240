"""The QoS cgroup tree, as the kubelet's QoS container manager keeps it.

Under the pods' root (`kubepods`; `--cgroup-root`): the root capped at node
allocatable, capacity less --kube-reserved and --system-reserved, when
`--enforce-node-allocatable=pods` (memory limit; its cpu shares are the
allocatable cpu's), `burstable` with cpu shares for the sum of its pods'
cpu requests, `besteffort` with the minimum shares (2), and each pod's own
cgroup with the sum of its containers' requests (shares) and, when every
container sets them, limits (memory limit, cpu quota). `qos_tree` is pure;
`QOSCgroups.sync` applies what changed through the runtime's cgroup code
(`python -m runtime.linux.cgroup_tool`: the agent may not import the
runtime, so it runs it, as it runs `skiff-cni reconcile`), off the pod
start path: pod startup never waits for it.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent.admission import pod_requests
from agent.pod_config import pod_cgroup_parent
from agent.resources import CPU_PERIOD_US, MIN_SHARES, cpu_quota, cpu_shares
from controlplane.api.qos import QOSClass, qos_class
from controlplane.api.quantity import parse_quantity

log = logging.getLogger("skiff.agent.qos")

REPO = Path(__file__).resolve().parents[1]
Tree = dict[str, dict[str, int]]


def pod_limits(pod: Mapping[str, Any]) -> dict[str, float]:
    """Sum of the containers' limits of each resource every container limits."""
    containers = (pod.get("spec") or {}).get("containers") or []
    out: dict[str, float] = {}
    for name in ("cpu", "memory"):
        values = [((c.get("resources") or {}).get("limits") or {}).get(name) for c in containers]
        if containers and all(v is not None for v in values):
            try:
                out[name] = float(sum(parse_quantity(v) for v in values))
            except ValueError:
                continue
    return out


def qos_tree(
    root: str,
    allocatable_cpu_milli: int,
    allocatable_memory: int,
    pods: Sequence[Mapping[str, Any]],
    enforce: bool = True,
) -> Tree:
    root = "/" + root.strip("/")
    top: dict[str, int] = {"cpu_shares": cpu_shares(allocatable_cpu_milli)}
    if enforce and allocatable_memory > 0:
        top["memory_limit"] = allocatable_memory
    burstable_milli = 0
    per_pod: Tree = {}
    for pod in pods:
        qos = qos_class(pod)
        requests = pod_requests(pod)
        milli = int(requests.get("cpu", 0.0) * 1000)
        if qos is QOSClass.BURSTABLE:
            burstable_milli += milli
        if qos is QOSClass.BEST_EFFORT or not pod["metadata"].get("uid"):
            continue
        values = {"cpu_shares": cpu_shares(milli)}
        limits = pod_limits(pod)
        if "memory" in limits:
            values["memory_limit"] = int(limits["memory"])
        if "cpu" in limits:
            values["cpu_quota"] = cpu_quota(int(limits["cpu"] * 1000))
            values["cpu_period"] = CPU_PERIOD_US
        per_pod[pod_cgroup_parent(pod, root)] = values
    tree: Tree = {
        root: top,
        f"{root}/burstable": {"cpu_shares": cpu_shares(burstable_milli)},
        f"{root}/besteffort": {"cpu_shares": MIN_SHARES},
    }
    tree.update(per_pod)
    return tree


class QOSCgroups:
    def __init__(self, root: str, enforce: bool = True) -> None:
        self.root = root
        self.enforce = enforce
        self._applied: Tree = {}

    def sync(
        self, allocatable_cpu_milli: int, allocatable_memory: int, pods: Sequence[Mapping[str, Any]]
    ) -> int:
        """Apply what changed since the last sync; how many cgroups were written."""
        tree = qos_tree(self.root, allocatable_cpu_milli, allocatable_memory, pods, self.enforce)
        changed = {k: v for k, v in tree.items() if self._applied.get(k) != v}
        self._applied = {k: v for k, v in self._applied.items() if k in tree}
        if not changed:
            return 0
        res = subprocess.run(
            [sys.executable, "-m", "runtime.linux.cgroup_tool", "apply", json.dumps(changed)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if res.returncode != 0:
            log.warning("QoS cgroups not applied: %s", (res.stderr or res.stdout).strip())
            return 0
        self._applied.update(changed)
        return len(changed)
