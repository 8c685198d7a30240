"""localhost/ seccomp profiles as containerd loads them (issue 32): CRI's
localhost_ref is an absolute path chosen by the trusted kubelet and is loaded
as given (critest writes its profiles under $TMPDIR and names them so); a
relative one is read from inside --seccomp-profile-root, never through `..`
or a symlink out. The agent confines pods (agent.pod_config.localhost_profile)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from runtime import errors
from runtime.cri.seccomp_profiles import MAX_PROFILE_BYTES, read_localhost

ALLOW = json.dumps({"defaultAction": "SCMP_ACT_ALLOW"}).encode()


def test_absolute_profile_loaded_as_given(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    elsewhere = tmp_path / "seccomp-tests123" / "block-chmod.json"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(ALLOW)
    assert read_localhost(root, str(elsewhere)) == ALLOW


def test_relative_profile_stays_in_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "p").mkdir(parents=True)
    (root / "p" / "ok.json").write_bytes(ALLOW)
    outside = tmp_path / "outside.json"
    outside.write_bytes(ALLOW)
    (root / "link.json").symlink_to(outside)
    assert read_localhost(root, "p/ok.json") == ALLOW
    with pytest.raises(errors.InvalidArgument, match=r"must not contain '\.\.'"):
        read_localhost(root, "../outside.json")
    with pytest.raises(errors.InvalidArgument, match="cannot load"):
        read_localhost(root, "link.json")


def test_not_a_regular_file_nor_unbounded(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(errors.InvalidArgument, match="not a regular file"):
        read_localhost(tmp_path, str(fifo))
    with pytest.raises(errors.InvalidArgument, match="cannot load"):
        read_localhost(tmp_path, str(tmp_path / "missing.json"))
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_PROFILE_BYTES + 100))
    assert len(read_localhost(tmp_path, str(big))) == MAX_PROFILE_BYTES + 1
