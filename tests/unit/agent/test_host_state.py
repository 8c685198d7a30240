"""The host-state lifecycle of skiff up (issue 22) and its data dir (issue 17),
the parts that need no daemon: which routes clash with the pod and service
CIDRs, which processes and mounts are an instance's, the record skiff down
reads, one instance per data dir, an unsafe data dir refused, admin.conf
never readable by others."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from agent.host_state import Instance, find_conflicts, mounts_under, names_a_root
from agent.instance_lock import Busy, InstanceLock
from agent.layout import Layout, unsafe_data_dir
from machinery.atomicfile import copy_private

RANGES = {"--cluster-cidr": "10.244.0.0/16", "--service-cidr": "10.43.0.0/16"}


@pytest.mark.parametrize(
    ("routes", "addrs", "want"),
    [
        # The issue: a stopped instance's bridge route shadows the new pods.
        ([{"dst": "10.244.0.0/24", "dev": "skiffa1b2c"}], [], [("skiffa1b2c", "--cluster-cidr")]),
        # Our own bridge and DNS interface are no conflict.
        ([{"dst": "10.244.0.0/24", "dev": "skiff0"}], [], []),
        (
            [],
            [{"ifname": "skiff-dns", "addr_info": [{"family": "inet", "local": "10.43.0.10"}]}],
            [],
        ),
        # Another instance's DNS address inside our service CIDR is.
        (
            [],
            [{"ifname": "skiffb-dns", "addr_info": [{"family": "inet", "local": "10.43.5.10"}]}],
            [("skiffb-dns", "--service-cidr")],
        ),
        # Our DNS address on lo (a kernel without the dummy driver).
        ([], [{"ifname": "lo", "addr_info": [{"family": "inet", "local": "10.43.0.10"}]}], []),
        # Wider routes shadow nothing of ours (the longer prefix wins).
        ([{"dst": "default", "dev": "eth0"}, {"dst": "10.0.0.0/8", "dev": "tun0"}], [], []),
        ([{"dst": "192.168.1.0/24", "dev": "eth0"}], [], []),
        # A host route (no prefix length) inside the range.
        ([{"dst": "10.244.7.7", "dev": "wg0"}], [], [("wg0", "--cluster-cidr")]),
        # IPv6 never compares with an IPv4 range.
        ([{"dst": "fd00::/64", "dev": "eth0"}], [], []),
    ],
)
def test_conflicts(
    routes: list[dict[str, str]], addrs: list[dict[str, Any]], want: list[tuple[str, str]]
) -> None:
    got = find_conflicts(routes, addrs, RANGES, {"skiff0", "skiff-dns"}, frozenset({"10.43.0.10"}))
    assert [(c.device, c.flag) for c in got] == want
    for c in got:
        assert c.device in c.message() and c.flag in c.message()


def test_processes_of_an_instance_are_pythons_and_haproxies_naming_its_dirs() -> None:
    roots = [Path("/tmp/x/a")]
    assert names_a_root(
        ["/usr/bin/python3", "-m", "skiff", "runtime", "--listen", "unix:///tmp/x/a/run/cri.sock"],
        roots,
    )
    assert names_a_root(
        ["/usr/bin/python3.11", "-S", "monitor.py", "sandbox", "/tmp/x/a/run/runtime/s.json"], roots
    )
    # skiff up itself names the dir, not a path under it; another dir with
    # the same prefix and a non-python process are not ours.
    assert not names_a_root(["python3", "skiff.py", "up", "--data-dir", "/tmp/x/a"], roots)
    assert not names_a_root(["python3", "x", "/tmp/x/ab/run/cri.sock"], roots)
    assert not names_a_root(["tail", "-f", "/tmp/x/a/logs/agent.log"], roots)
    # The ingress's HAProxy outlives a killed agent: it is the instance's too.
    haproxy = ["/usr/sbin/haproxy", "-W", "-f", "/tmp/x/a/agent/ingress/haproxy.cfg", "-p",
               "/tmp/x/a/agent/ingress/haproxy.pid"]  # fmt: skip
    assert names_a_root(haproxy, roots)
    assert not names_a_root(["/usr/sbin/haproxy", "-f", "/etc/haproxy/haproxy.cfg"], roots)


def test_mounts_under_deepest_first(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(
        "22 1 0:21 / /tmp/x/a rw - tmpfs t rw\n"
        "23 22 0:4 / /tmp/x/a/run/netns/p1 rw - nsfs nsfs rw\n"
        "24 1 0:22 / /tmp/x/ab rw - tmpfs t rw\n"
        "25 1 0:23 / /with\\040space/a rw - tmpfs t rw\n"
    )
    assert mounts_under([Path("/tmp/x/a")], info) == ["/tmp/x/a/run/netns/p1", "/tmp/x/a"]
    assert mounts_under([Path("/with space")], info) == ["/with space/a"]
    # The instance's own directory may be the admin's mount: only what is beneath goes.
    kept = mounts_under([Path("/tmp/x")], info, keep=[Path("/tmp/x/a")])
    assert kept == ["/tmp/x/a/run/netns/p1", "/tmp/x/ab"]


def test_the_record_skiff_down_reads(tmp_path: Path) -> None:
    inst = Instance.of(Layout.under(tmp_path), "10.99.0.0/16", "10.98.0.0/16", "10.98.0.10")
    inst.save()
    assert Instance.load(inst.record) == inst
    inst.record.write_text('{"data_dir": "/x"}')
    with pytest.raises(ValueError, match="roots"):
        Instance.load(inst.record)
    std = Instance.of(Layout.standard(), "10.244.0.0/16", "10.43.0.0/16", "10.43.0.10")
    assert std.roots == (Path("/var/lib/skiff"), Path("/run/skiff"))
    assert std.bridge == "skiff0" and std.cgroup == "/skiff"


def test_one_skiff_up_per_data_dir(tmp_path: Path) -> None:
    with (
        InstanceLock(tmp_path),
        pytest.raises(Busy, match=f"pid {os.getpid()}"),
        InstanceLock(tmp_path),
    ):
        pass
    with InstanceLock(tmp_path):  # released: taken again
        pass


@pytest.mark.root
def test_an_unsafe_data_dir_is_refused(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o755)
    good = tmp_path / "good"
    good.mkdir(mode=0o755)
    assert unsafe_data_dir(good) == ""
    assert unsafe_data_dir(tmp_path / "not-yet") == ""
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 1000, 1000)
    why = unsafe_data_dir(theirs)
    assert "owned by uid 1000" in why and "chown root" in why
    assert "owned by uid 1000" in unsafe_data_dir(theirs / "below")
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)
    assert "writable by group or others" in unsafe_data_dir(open_dir)
    # A sticky world-writable parent (as /tmp) is fine; the dir itself is not.
    os.chmod(open_dir, 0o1777)
    assert unsafe_data_dir(open_dir / "x") == ""
    assert "writable" in unsafe_data_dir(open_dir)


def test_admin_conf_is_never_readable_by_others(tmp_path: Path) -> None:
    src = tmp_path / "src.conf"
    src.write_text("token: secret\n")
    dst = tmp_path / "admin.conf"
    old = os.umask(0)
    try:
        copy_private(src, dst)
    finally:
        os.umask(old)
    assert dst.read_text() == "token: secret\n"
    assert stat.S_IMODE(dst.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["admin.conf", "src.conf"]


@pytest.mark.root
def test_skiff_up_refuses_an_unsafe_data_dir_before_starting_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agent import up

    os.chmod(tmp_path, 0o755)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 1000, 1000)
    assert up.main(["--data-dir", str(theirs), "--api-port", "1"]) == 1
    err = capsys.readouterr().err
    assert "owned by uid 1000" in err and "chown root" in err
    assert sorted(p.name for p in theirs.iterdir()) == []  # nothing made, nothing run
