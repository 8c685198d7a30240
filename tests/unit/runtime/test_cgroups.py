"""cgroup v1 and v2 logic against temporary directories shaped like
cgroupfs (no root, no kernel cgroups)."""

from __future__ import annotations

from pathlib import Path

from runtime.linux import cgroups
from runtime.linux.cgroups import Resources


def v2_root(tmp_path: Path) -> Path:
    root = tmp_path / "cg2"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids\n")
    (root / "cgroup.subtree_control").write_text("")
    return root


def test_v2_create_enables_controllers_and_applies(tmp_path: Path) -> None:
    root = v2_root(tmp_path)
    cg = cgroups.open_cgroup("/pods/c1", root)
    assert cg.version == 2
    cg.create()
    assert (root / "pods" / "c1").is_dir()
    assert "+cpu" in (root / "cgroup.subtree_control").read_text()
    assert "+memory" in (root / "cgroup.subtree_control").read_text()
    cg.apply(
        Resources(
            cpu_shares=1024,
            cpu_quota=50000,
            cpu_period=100000,
            memory_limit=64 << 20,
            pids_limit=99,
        )
    )
    d = root / "pods" / "c1"
    assert (d / "cpu.weight").read_text() == "39"
    assert (d / "cpu.max").read_text() == "50000 100000"
    assert (d / "memory.max").read_text() == str(64 << 20)
    assert (d / "pids.max").read_text() == "99"
    assert cg.procs_files == [str(d / "cgroup.procs")]


def test_v2_stats_and_oom(tmp_path: Path) -> None:
    root = v2_root(tmp_path)
    cg = cgroups.open_cgroup("c", root)
    cg.create()
    d = root / "c"
    (d / "cpu.stat").write_text("usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n")
    (d / "memory.current").write_text("1000000\n")
    (d / "memory.stat").write_text("anon 300000\ninactive_file 200000\npgfault 7\npgmajfault 1\n")
    (d / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    st = cg.stats()
    assert st.cpu_usage_ns == 1_500_000 and st.memory_usage == 1_000_000
    assert st.memory_working_set == 800_000 and st.memory_rss == 300_000
    assert st.page_faults == 7 and st.major_page_faults == 1
    assert cg.oom_kills() == 1


def test_v2_unlimited_quota(tmp_path: Path) -> None:
    root = v2_root(tmp_path)
    cg = cgroups.open_cgroup("c", root)
    cg.create()
    cg.apply(Resources(cpu_period=100000))
    assert (root / "c" / "cpu.max").read_text() == "max 100000"


def test_shares_to_weight_matches_runc() -> None:
    assert cgroups.shares_to_weight(2) == 1
    assert cgroups.shares_to_weight(1024) == 39
    assert cgroups.shares_to_weight(262144) == 10000


def test_v1_per_controller_dirs(tmp_path: Path) -> None:
    root = tmp_path / "cg1"
    for ctrl in ("cpu", "cpuacct", "memory", "pids", "cpuset"):
        (root / ctrl).mkdir(parents=True)
    (root / "cpuset" / "cpuset.cpus").write_text("0-1\n")
    (root / "cpuset" / "cpuset.mems").write_text("0\n")
    cg = cgroups.open_cgroup("/k/c1", root)
    assert cg.version == 1
    cg.create()
    assert (root / "memory" / "k" / "c1").is_dir()
    assert not (root / "cpuset" / "k").exists()  # only when asked for
    cg.apply(Resources(cpu_quota=20000, cpu_period=100000, memory_limit=1 << 20, cpuset_cpus="1"))
    assert (root / "cpu" / "k" / "c1" / "cpu.cfs_quota_us").read_text() == "20000"
    assert (root / "memory" / "k" / "c1" / "memory.limit_in_bytes").read_text() == str(1 << 20)
    # the cpuset cgroup was made on first use, with the parent's mems copied down
    assert (root / "cpuset" / "k" / "cpuset.mems").read_text() == "0"
    assert (root / "cpuset" / "k" / "c1" / "cpuset.cpus").read_text() == "1"
    (root / "memory" / "k" / "c1" / "memory.oom_control").write_text(
        "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"
    )
    assert cg.oom_kills() == 2
    (root / "cpuacct" / "k" / "c1" / "cpuacct.usage").write_text("12345\n")
    assert cg.stats().cpu_usage_ns == 12345
