"""Removing pod cgroups: only empty directories, in every hierarchy, any QoS class."""

from __future__ import annotations

from pathlib import Path

from agent.pod_cgroups import (
    cgroup_mounts,
    remove_empty_tree,
    remove_pod_cgroup,
    sweep_pod_cgroups,
)

MOUNTINFO = """\
25 30 0:22 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
26 30 0:23 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
27 30 0:24 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw
28 30 0:25 / /proc rw - proc proc rw
29 30 0:26 / /mnt/with\\040space rw - cgroup2 none rw
"""


def test_cgroup_mounts_of_both_versions(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(MOUNTINFO)
    assert cgroup_mounts(info) == [
        Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup/cpu,cpuacct"),
        Path("/sys/fs/cgroup/unified"), Path("/mnt/with space"),
    ]  # fmt: skip
    assert cgroup_mounts(tmp_path / "missing") == []


def test_pod_cgroup_removed_in_every_hierarchy_whatever_its_qos(tmp_path: Path) -> None:
    mounts = [tmp_path / "memory", tmp_path / "cpu"]
    for m in mounts:
        (m / "skiff/pods/besteffort/podA").mkdir(parents=True)
        (m / "skiff/pods/podG").mkdir(parents=True)
        (m / "skiff/pods/burstable/podB/busy").mkdir(parents=True)  # not empty: stays
    assert remove_pod_cgroup("/skiff/pods", "A", mounts) == 2
    assert remove_pod_cgroup("/skiff/pods", "G", mounts) == 2
    assert remove_pod_cgroup("/skiff/pods", "B", mounts) == 0
    assert remove_pod_cgroup("/skiff/pods", "", mounts) == 0
    for m in mounts:
        assert not (m / "skiff/pods/besteffort/podA").exists()
        assert not (m / "skiff/pods/podG").exists()
        assert (m / "skiff/pods/burstable/podB/busy").is_dir()
        assert (m / "skiff/pods/besteffort").is_dir()  # the QoS level stays


def test_empty_tree_removed_deepest_first_busy_parts_stay(tmp_path: Path) -> None:
    m = tmp_path / "unified"
    (m / "skiff-x/pods/besteffort/podA").mkdir(parents=True)
    (m / "skiff-x/pods/burstable").mkdir(parents=True)
    (m / "skiff-x/runtime/sb1").mkdir(parents=True)
    (m / "skiff-x/runtime/sb1/cgroup.procs").write_text("123\n")  # "busy"
    (m / "other").mkdir()
    assert remove_empty_tree("/skiff-x", [m]) == 4
    assert sorted(str(p.relative_to(m)) for p in m.rglob("*") if p.is_dir()) == [
        "other", "skiff-x", "skiff-x/runtime", "skiff-x/runtime/sb1",
    ]  # fmt: skip
    assert remove_empty_tree("/", [m]) == 0  # never the whole hierarchy


def test_sweep_removes_empty_cgroups_of_unknown_pods_only(tmp_path: Path) -> None:
    mounts = [tmp_path / "memory", tmp_path / "unified"]
    for m in mounts:
        for rel in ("pods/podGONE", "pods/besteffort/podOLD", "pods/burstable/podLIVE",
                    "pods/burstable/podBUSY/child", "pods/besteffort/not-a-pod"):  # fmt: skip
            (m / rel).mkdir(parents=True)
    assert sweep_pod_cgroups("/pods", {"LIVE"}, mounts) == 4
    for m in mounts:
        left = sorted(str(p.relative_to(m)) for p in m.rglob("*") if p.is_dir())
        assert left == [
            "pods", "pods/besteffort", "pods/besteffort/not-a-pod", "pods/burstable",
            "pods/burstable/podBUSY", "pods/burstable/podBUSY/child", "pods/burstable/podLIVE",
        ]  # fmt: skip
    assert sweep_pod_cgroups("/missing", set(), mounts) == 0
