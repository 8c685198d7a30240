"""SIGTERM stops the control plane in reverse start order (issue 27 item 5):
its components (threads, or child processes) stop first and release their
Leases while the API server still serves, as client-go's ReleaseOnCancel
does (holderIdentity cleared, leaseDurationSeconds 1), so a successor need
not wait out the lease; the API server stops last. Before, the API server
stopped under the in-process components and their Leases stayed held.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from controlplane.client import errors
from tests.harness.controlplane import ControlPlane
from tests.harness.wait import wait_for

pytestmark = pytest.mark.slow

LEASES = ("skiff-scheduler", "volcano", "skiff-controller-manager")


def holders(cp: ControlPlane) -> dict[str, dict[str, object]]:
    client = cp.client()
    out = {}
    for name in LEASES:
        try:
            out[name] = client.get("Lease", name, "kube-system").get("spec") or {}
        except errors.NotFound:
            out[name] = {}
    return out


@pytest.mark.parametrize("mode", ["--no-component-processes", "--component-processes"])
def test_sigterm_releases_the_components_leases(tmp_path: Path, mode: str) -> None:
    cp = ControlPlane(tmp_path / "cp", [mode], components=True)
    try:
        cp.start()
        wait_for(
            lambda: all(spec.get("holderIdentity") for spec in holders(cp).values()),
            timeout=60,
            message="every component leads",
        )
        log = cp.log_path
        assert cp.stop(signal.SIGTERM) == 0, log.read_text()[-4000:]
        # The same store, served again without components: what the leases say now.
        again = ControlPlane(cp.data_dir, [], components=False)
        cp.clients.clear()
        try:
            again.start()
            released = holders(again)
        finally:
            again.close()
        held = {name: spec for name, spec in released.items() if spec.get("holderIdentity")}
        if held:  # the whole log's end, which an assertion's message would cut short
            pytest.fail(f"still held after SIGTERM: {held}\n--- control plane log ---\n"
                        f"{cp.log_path.read_text()[-12000:]}", pytrace=False)  # fmt: skip
        for name, spec in released.items():
            assert spec.get("leaseDurationSeconds") == 1, (name, spec)
    finally:
        cp.close()


def test_sigterm_does_not_wait_out_the_grace_for_connected_clients(tmp_path: Path) -> None:
    """A gRPC client still connected (an agent, a component's channel) hangs
    up when the server's GOAWAY reaches it through the API port's relay, so
    the API server stops at once. Before, the relays were closed first, the
    GOAWAY never arrived, and gRPC's shutdown waited out its 2 s grace for
    the connection on every stop."""
    cp = ControlPlane(tmp_path / "cp", [], components=False)
    try:
        cp.start()
        cp.client().whoami()  # connected, idle, left open through the stop
        assert cp.stop(signal.SIGTERM) == 0
        log = cp.log_path.read_text()
        found = re.search(r"API server stopped in ([0-9.]+)s", log)
        assert found is not None, log[-4000:]
        assert float(found.group(1)) < 1.0, found.group(0)
    finally:
        cp.close()
