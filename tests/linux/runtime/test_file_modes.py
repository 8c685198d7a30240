"""Host privilege escalation through container files (issue 17, the
CVE-2021-41091 class): a setuid binary made in a root container's writable
layer must not be executable by an unprivileged host user; state, upper dirs
and logs are not open to every host user."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.linux.runtime.harness import Runtime, container_config
from tests.linux.runtime.test_containers import started
from tests.linux.runtime.test_lifecycle import exec_sync, run_pod

pytestmark = pytest.mark.root
NOBODY = 65534


def test_setuid_in_upper_dir_not_executable_by_host_users(runtime: Runtime, tmp_path: Path) -> None:
    r = runtime
    sid, pcfg = run_pod(r, tmp_path, "suid")
    cfg = container_config("c", ["sleep", "1000"], log_path="c/0.log")
    cid = started(r, sid, pcfg, cfg)
    res = exec_sync(r, cid, ["sh", "-c", "cp /bin/busybox /suid && chmod 4755 /suid"])
    assert res.exit_code == 0, res.stderr
    upper = r.root / "containers" / cid / "upper" / "suid"
    assert upper.exists() and os.stat(upper).st_mode & 0o4000
    # an unprivileged host user can neither run it nor even reach it
    try:
        proc = subprocess.run(
            [str(upper), "id", "-u"], user=NOBODY, group=NOBODY, capture_output=True, check=False
        )
    except PermissionError:
        pass
    else:
        raise AssertionError(f"ran as uid {proc.stdout!r} for an unprivileged host user")
    probe = subprocess.run(
        ["/bin/sh", "-c", f'test -e "{upper}" && echo reachable || echo hidden'],
        user=NOBODY, group=NOBODY, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert probe.stdout.strip() == "hidden"
    for private in (r.root, r.state, r.root / "containers" / cid):
        assert os.stat(private).st_mode & 0o077 == 0, private
    log = tmp_path / "logs" / "suid" / "c" / "0.log"
    assert os.stat(log).st_mode & 0o777 == 0o640
    exec_sync(r, cid, ["rm", "/suid"])
