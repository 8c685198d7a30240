"""`skiff controlplane --component-processes`: the scheduler, the batch
scheduler and the controller manager as child processes of the control
plane, as kubeadm runs kube-scheduler and kube-controller-manager.

A real control plane (its own process, SQLite in a temp dir, a free port)
with one hollow node: a Deployment's pod is bound by the default scheduler
and a Volcano Job's pods by the batch scheduler, each component writing as
its own identity (the audit log says so); a component killed is started
again; the control plane stopped, or killed, leaves none of them behind.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.hollow import HollowConfig, HollowNodes
from controlplane.api import volcano
from tests.fakes.volcano_examples import example_job
from tests.harness.controlplane import ControlPlane
from tests.harness.hollow import wait_schedulable
from tests.harness.wait import wait_for
from tests.integration.controlplane.test_component_identities import (
    components_write_as_themselves,
)

pytestmark = pytest.mark.slow
MODULES = {
    "scheduler": "controlplane.scheduler.run",
    "volcano-scheduler": "controlplane.scheduler.batch.run",
    "controllers": "controlplane.controllers.manager",
}


def children(pid: int) -> dict[str, int]:
    """The component processes whose parent is `pid`, by component name."""
    found: dict[str, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != pid:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        for name, module in MODULES.items():
            if module in argv:
                found[name] = int(entry)
    return found


def alive(pid: int) -> bool:
    """Whether `pid` is still a process (and not a zombie awaiting its parent)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def start_plane(base: Path, *extra: str, count: int = 3) -> ControlPlane:
    """The control plane with `count` component processes started."""
    cp = ControlPlane(base / "cp", ["--component-processes", *extra], components=True)
    cp.start()
    pid = cp.proc.pid if cp.proc is not None else 0
    try:
        wait_for(lambda: len(children(pid)) == count, timeout=30,
                 message=f"{count} component processes")  # fmt: skip
    except BaseException:
        cp.close()
        raise
    return cp


def kill_all(pids: list[int]) -> None:
    """SIGKILL what is left of `pids` (the test's own cleanup, after a failure)."""
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ControlPlane, Path]]:
    base = tmp_path_factory.mktemp("procs")
    audit = base / "audit.log"
    cp = start_plane(base, "--audit-log-path", str(audit), "--controllers", "*,-podgc")
    assert cp.proc is not None
    seen = list(children(cp.proc.pid).values())
    try:
        admin = cp.client()
        nodes = HollowNodes(admin, HollowConfig(nodes=1, cpu="8", memory="16Gi", prefix="prc"))
        try:
            nodes.start()
            wait_schedulable(admin, 1)
            yield cp, audit
        finally:
            nodes.stop()
    finally:
        if cp.proc is not None:
            seen += children(cp.proc.pid).values()
        cp.close()
        kill_all(seen)


def test_components_as_processes_bind_and_write_as_themselves(
    plane: tuple[ControlPlane, Path],
) -> None:
    cp, audit = plane
    components_write_as_themselves(cp.client(), audit)
    assert "scheduler: " in cp.log_path.read_text()  # their logs, named, in the control plane's


def test_a_killed_component_is_started_again(plane: tuple[ControlPlane, Path]) -> None:
    cp, _ = plane
    assert cp.proc is not None
    pid = cp.proc.pid
    old = children(pid)["volcano-scheduler"]
    os.kill(old, signal.SIGKILL)
    wait_for(lambda: children(pid).get("volcano-scheduler", old) != old, timeout=30,
             message="the batch scheduler started again")  # fmt: skip
    assert f"component=volcano-scheduler pid={old} exited (signal 9)" in cp.log_path.read_text()
    # The new one leads again and schedules: another Job's pods are bound.
    api = cp.client()
    api.create(volcano.JOB_KEY, example_job("again", replicas=1, min_available=1), "default")

    def bound() -> bool:
        pods = api.list("Pod", "default").items
        return any(
            (p["metadata"].get("labels") or {}).get(volcano.JOB_NAME) == "again"
            and p["spec"].get("nodeName")
            for p in pods
        )

    wait_for(bound, timeout=60, message="the restarted batch scheduler binds")


def test_stopping_the_control_plane_stops_its_components(tmp_path: Path) -> None:
    cp = start_plane(tmp_path, "--disable", "scheduler", count=2)
    assert cp.proc is not None
    pids = list(children(cp.proc.pid).values())  # --disable holds for processes too
    try:
        assert cp.stop() == 0
        assert not [p for p in pids if alive(p)]
    finally:
        cp.close()
        kill_all(pids)


def test_a_killed_control_plane_leaves_no_component_behind(tmp_path: Path) -> None:
    cp = start_plane(tmp_path)
    assert cp.proc is not None
    pids = list(children(cp.proc.pid).values())
    try:
        cp.stop(signal.SIGKILL)
        wait_for(lambda: not [p for p in pids if alive(p)], timeout=30,
                 message="the components gone with the control plane")  # fmt: skip
    finally:
        cp.close()
        kill_all(pids)
