"""`skiff controlplane` keeps its own threads on one CPU (--one-cpu, the
default): they share one GIL, and handing it between CPUs cost the API
server a third of its CPU in bench.volcano. Its component processes are
started with every CPU it had, so they run beside it, not on its one CPU;
--no-one-cpu leaves every thread where the kernel puts it."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest

from tests.harness.controlplane import ControlPlane
from tests.harness.wait import wait_for

pytestmark = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="pinning to one CPU needs a process allowed 2 or more"
)


def affinities(pid: int) -> dict[int, list[int]]:
    """Each live thread of `pid`: the CPUs it may run on."""
    out = {}
    for name in os.listdir(f"/proc/{pid}/task"):
        try:
            out[int(name)] = sorted(os.sched_getaffinity(int(name)))
        except ProcessLookupError:  # ended meanwhile
            continue
    return out


def test_the_control_plane_runs_on_one_cpu_and_its_components_on_every_cpu(tmp_path: Path) -> None:
    """The defaults: on two CPUs or more, component processes and --one-cpu (the
    choice of processes counts the CPUs the process may use, not its one)."""
    everything = sorted(os.sched_getaffinity(0))  # what the control plane inherits
    cp = ControlPlane(tmp_path / "cp", [], components=True)
    try:
        cp.start()
        assert cp.proc is not None
        pid = cp.proc.pid
        children = psutil.Process(pid).children
        wait_for(lambda: len(children()) >= 3, timeout=60, message="the component processes")
        # One CPU for every thread (read until no thread is between a move's
        # first and last pin, or starting a child with every CPU).
        wait_for(lambda: len({tuple(c) for c in affinities(pid).values()}) == 1, timeout=10,
                 message="every thread of the control plane on one CPU")  # fmt: skip
        (cpu,) = next(iter(affinities(pid).values()))
        assert cpu in everything
        for child in children():
            threads = affinities(child.pid)
            assert threads and all(c == everything for c in threads.values()), (child, threads)
        assert "threads on CPU" in cp.log_path.read_text()
    finally:
        cp.close()


def test_no_one_cpu_leaves_the_threads_on_every_cpu(tmp_path: Path) -> None:
    everything = sorted(os.sched_getaffinity(0))
    cp = ControlPlane(tmp_path / "cp", ["--no-one-cpu"])
    try:
        cp.start()
        assert cp.proc is not None
        threads = affinities(cp.proc.pid)
        assert threads and all(c == everything for c in threads.values()), threads
    finally:
        cp.close()
