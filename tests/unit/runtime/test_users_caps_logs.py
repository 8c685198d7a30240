"""Pure pieces of the executor: user resolution, capability rules, the CRI
log line format, secure path joins, seccomp compilation."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from machinery.rfc3339 import format_nano_trimmed
from runtime.linux import caps, mounts, seccomp, users
from runtime.process.logs import LineWriter

PASSWD = users.parse_passwd(
    "root:x:0:0:root:/root:/bin/sh\nwww-data:x:33:33::/var/www:/bin/false\n"
    "default-user:x:1000:1000::/home/d:/bin/sh\n"
)
GROUPS = users.parse_group(
    "root:x:0:\nwww-data:x:33:\ngroup-defined-in-image:x:50000:default-user\n"
)


def test_resolve_users() -> None:
    assert users.resolve(PASSWD, GROUPS, None, "", None, []).uid == 0
    c = users.resolve(PASSWD, GROUPS, 1000, "", None, [1234])
    assert (c.uid, c.gid, c.groups) == (1000, 1000, (50000, 1234))
    c = users.resolve(PASSWD, GROUPS, None, "www-data", None, [])
    assert (c.uid, c.gid) == (33, 33)
    c = users.resolve(PASSWD, GROUPS, 1003, "", 1004, [])
    assert (c.uid, c.gid) == (1003, 1004)
    assert users.resolve(PASSWD, GROUPS, None, "www-data", None, [], groupname="root").gid == 0
    with pytest.raises(users.UnknownUser):
        users.resolve(PASSWD, GROUPS, None, "nobody-here", None, [])


def test_capability_rules() -> None:
    assert caps.compute([], [], False) == caps.DEFAULT
    got = caps.compute(["NET_ADMIN"], ["NET_RAW"], False)
    assert "NET_ADMIN" in got and "NET_RAW" not in got
    assert caps.compute([], ["ALL"], False) == []
    assert caps.compute(["CAP_CHOWN"], ["ALL"], False) == ["CHOWN"]
    assert "SYS_ADMIN" in caps.compute(["ALL"], [], False)
    with pytest.raises(caps.UnknownCapability):
        caps.compute(["FLY"], [], False)


def test_log_lines() -> None:
    w = LineWriter("stdout", max_line=8)
    out = w.feed(b"hello\nworld-too-long\npart")
    lines = out.splitlines()
    assert [ln.split(b" ", 3)[2:] for ln in lines] == [
        [b"F", b"hello"],
        [b"P", b"world-to"],
        [b"F", b"o-long"],
    ]
    assert w.flush().split(b" ", 3)[2:] == [b"F", b"part\n"]
    stamp = format_nano_trimmed()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z", stamp)
    assert format_nano_trimmed(1_500_000_000) == "1970-01-01T00:00:01.5Z"
    assert format_nano_trimmed(2_000_000_000) == "1970-01-01T00:00:02Z"


def test_secure_join_never_leaves_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    os.symlink("/etc/passwd", root / "etc" / "evil")
    os.symlink("../../../../tmp", root / "up")
    assert mounts.secure_join(str(root), "/etc/evil") == str(root / "etc" / "passwd")
    assert mounts.secure_join(str(root), "/up/x") == str(root / "tmp" / "x")
    assert mounts.secure_join(str(root), "../../x") == str(root / "x")


def test_seccomp_build_produces_bpf() -> None:
    bpf = seccomp.build(seccomp.default_profile(["CHOWN"]), ["CHOWN"])
    assert bpf and len(bpf) % 8 == 0
    # an allow-list: a capability adds syscalls (and drops the clone guard)
    prof = seccomp.default_profile(["CHOWN"])
    assert prof["defaultAction"] == "SCMP_ACT_ERRNO"
    allowed = {n for r in prof["syscalls"] if r["action"] == "SCMP_ACT_ALLOW" for n in r["names"]}
    assert {"read", "execve", "clone"} <= allowed
    assert not {"unshare", "mount", "io_uring_setup", "keyctl", "bpf"} & allowed
    admin = seccomp.default_profile(["SYS_ADMIN"])
    assert "unshare" in {n for r in admin["syscalls"] for n in r["names"]}
    with_admin = seccomp.build(admin, ["SYS_ADMIN"])
    assert with_admin != bpf
    with pytest.raises(ValueError):
        seccomp.build({"defaultAction": "SCMP_ACT_WHATEVER"})
