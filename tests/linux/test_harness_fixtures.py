"""The harness fixtures make real kernel objects and remove them again."""

import os
import subprocess
from pathlib import Path

import pytest

from tests.harness.cgroup import temp_cgroup
from tests.harness.mounts import mounts_under, scratch_dir
from tests.harness.netns import netns_path, temp_netns, temp_veth

pytestmark = [pytest.mark.root, pytest.mark.netns]


def _links(netns: str | None = None) -> str:
    cmd = ["ip"] + (["-n", netns] if netns else []) + ["-o", "link"]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def test_netns_and_veth_are_removed() -> None:
    with temp_netns() as ns:
        assert os.path.exists(netns_path(ns))
        assert "lo:" in _links(ns) and "UP" in _links(ns)
        with temp_veth(peer_netns=ns) as pair:
            assert pair.host in _links()
            assert pair.peer in _links(ns)
        assert pair.host not in _links()
    assert not os.path.exists(netns_path(ns))


def test_cgroup_is_removed_with_its_processes() -> None:
    proc = subprocess.Popen(["sleep", "600"])
    try:
        with temp_cgroup() as cg:
            for path in cg.paths:
                assert path.is_dir()
                if cg.version == 2 or path.parent.name in ("pids", "memory"):
                    (path / "cgroup.procs").write_text(str(proc.pid))
        assert all(not p.exists() for p in cg.paths)
        assert proc.wait(timeout=10) == -9
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_scratch_dir_unmounts(tmp_path: Path) -> None:
    with scratch_dir(tmp_path / "s") as d:
        (d / "m").mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(d / "m")], check=True)
        assert mounts_under(d)
    assert not mounts_under(tmp_path / "s")
    assert not (tmp_path / "s").exists()
