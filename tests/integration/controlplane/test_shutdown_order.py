"""SIGTERM stops the control plane in reverse start order (issue 27 item 5):
its components (threads, or child processes) stop first and release their
Leases while the API server still serves, as client-go's ReleaseOnCancel
does (holderIdentity cleared, leaseDurationSeconds 1), so a successor need
not wait out the lease; the API server stops last. Before, the API server
stopped under the in-process components and their Leases stayed held.
"""

from __future__ import annotations

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
