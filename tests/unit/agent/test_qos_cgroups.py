"""The QoS cgroup tree (issue 20): its values (pure) and, as root, the
runtime's cgroup code applying them to real cgroups for the agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.qos_cgroups import QOSCgroups, qos_tree
from tests.harness.cgroup import CGROUP_ROOT, is_cgroup_v2, remove_cgroup_tree, temp_cgroup

MI = 1 << 20


def pod(
    uid: str, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None
) -> dict[str, Any]:
    res: dict[str, Any] = {}
    if requests:
        res["requests"] = requests
    if limits:
        res["limits"] = limits
    return {"metadata": {"uid": uid}, "spec": {"containers": [{"name": "c", "resources": res}]}}


def test_the_tree_as_the_kubelet_keeps_it() -> None:
    pods = [
        pod("g", limits={"cpu": "500m", "memory": "64Mi"}),
        pod("b1", requests={"cpu": "250m"}),
        pod("b2", requests={"cpu": "250m", "memory": "32Mi"}, limits={"memory": "128Mi"}),
        pod("be"),
    ]
    tree = qos_tree("/kubepods", 2000, 700 * MI, pods)
    assert tree["/kubepods"] == {"cpu_shares": 2048, "memory_limit": 700 * MI}
    assert tree["/kubepods/burstable"] == {"cpu_shares": 512}
    assert tree["/kubepods/besteffort"] == {"cpu_shares": 2}
    assert tree["/kubepods/podg"] == {
        "cpu_shares": 512, "memory_limit": 64 * MI, "cpu_quota": 50_000, "cpu_period": 100_000,
    }  # fmt: skip
    assert tree["/kubepods/burstable/podb1"] == {"cpu_shares": 256}
    assert tree["/kubepods/burstable/podb2"] == {"cpu_shares": 256, "memory_limit": 128 * MI}
    assert "/kubepods/besteffort/podbe" not in tree
    # --enforce-node-allocatable=none: no memory cap on the root.
    assert (
        "memory_limit" not in qos_tree("/kubepods", 2000, 700 * MI, [], enforce=False)["/kubepods"]
    )


@pytest.mark.root
def test_kubepods_limits_equal_allocatable_on_real_cgroups() -> None:
    if is_cgroup_v2():
        pytest.skip("this machine's hierarchy is v1; v2 is covered by the runtime's cgroup tests")
    with temp_cgroup("skiff-qos-") as cg:
        root = f"/{cg.name}/kubepods"
        try:
            q = QOSCgroups(root)
            assert q.sync(1500, 300 * MI, [pod("g", limits={"cpu": "1", "memory": "64Mi"})]) == 4
            mem = CGROUP_ROOT / "memory" / root.strip("/")
            cpu = CGROUP_ROOT / "cpu" / root.strip("/")
            assert int((mem / "memory.limit_in_bytes").read_text()) == 300 * MI
            assert int((cpu / "cpu.shares").read_text()) == 1536
            assert int((cpu / "besteffort" / "cpu.shares").read_text()) == 2
            assert int((mem / "podg" / "memory.limit_in_bytes").read_text()) == 64 * MI
            assert int((cpu / "podg" / "cpu.cfs_quota_us").read_text()) == 100_000
            assert q.sync(1500, 300 * MI, [pod("g", limits={"cpu": "1", "memory": "64Mi"})]) == 0
        finally:
            # The tree is made in every hierarchy the runtime's cgroup code
            # uses (devices too), not only in those temp_cgroup made.
            for hierarchy in CGROUP_ROOT.iterdir():
                top = hierarchy / cg.name
                if not top.is_dir() or hierarchy.is_symlink():
                    continue
                for child in sorted(
                    (d for d in top.rglob("*") if d.is_dir()), key=lambda d: -len(d.parts)
                ):
                    remove_cgroup_tree(Path(child))
                remove_cgroup_tree(top)
