"""`skiff up` at rest holds no `cryptography` (issue 27 item 8: about 9 MB of
its memory at rest).

Every certificate, key and signing request of a start is made in a
short-lived child (machinery.inchild): the cluster PKI and the front
proxy's, the agent's join request and the API server's signature of it,
the node's client certificate through the CertificateSigningRequest API
(its key and request, the API server's signature check, the signer), the
components' self-signed serving certificates; expiry dates and names are
read from the DER (machinery.x509read). Checked on a real `skiff up` from a
fresh data dir, the start that makes all of them, once Ready and its node's
client certificate taken up: cryptography's native module is mapped in none
of skiff up's long-lived processes (skiff up itself and the runtime).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.harness.nodeprocs import free_service_cidrs, short_tempdir
from tests.harness.skiff_up import Up, free_cluster_cidrs
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow]


def _crypto_mapped(pid: int) -> bool:
    try:
        return "/cryptography/" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:  # a short-lived child that is gone
        return False


def test_skiff_up_at_rest_has_not_loaded_cryptography() -> None:
    base = short_tempdir("skrest-")
    up = Up("r", base / "r", free_cluster_cidrs(1)[0], free_service_cidrs(1)[0])
    try:
        up.data_dir.mkdir()
        registries = base / "registries.yaml"
        registries.write_text("mirrors: {}\ndisable_default_endpoint: true\n")
        up.start(registries)
        up.wait_ready().close()
        node_conf = up.layout.agent_root / "node.conf"

        def client_certificate_in_use() -> bool:
            return b"client-certificate-data" in node_conf.read_bytes()

        wait_for(client_certificate_in_use, timeout=60, interval=0.2,
                 message="the node's client certificate issued")  # fmt: skip
        assert up.daemon is not None
        pid = up.daemon.pid
        runtime = [p for p in descendants(pid) if b"runtime" in _cmdline(p)]
        assert runtime, "no runtime process under skiff up"
        loaded = [p for p in (pid, *runtime) if _crypto_mapped(p)]
        assert loaded == [], f"cryptography is loaded in {[_cmdline(p) for p in loaded]}"
    except BaseException:
        sys.stderr.write(up.log_tail() + "\n")
        raise
    finally:
        try:
            up.cleanup()
        finally:
            shutil.rmtree(base, ignore_errors=True)


def descendants(pid: int) -> list[int]:
    """Every process under `pid` (by their parents in /proc/PID/stat)."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        children = [p for p, pp in parent.items() if pp == current]
        found += children
        todo += children
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return b""
