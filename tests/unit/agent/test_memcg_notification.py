"""The memory cgroup threshold notification wakes the eviction manager the
moment usage crosses a threshold (cgroup v1's cgroup.event_control), on a
real cgroup with a real allocation (issue 20)."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from agent.eviction.signals import ThresholdNotifier
from tests.harness.cgroup import CGROUP_ROOT, is_cgroup_v2, temp_cgroup

pytestmark = pytest.mark.root


def test_crossing_a_memory_threshold_wakes_at_once() -> None:
    if is_cgroup_v2() or not (CGROUP_ROOT / "memory" / "cgroup.event_control").exists():
        pytest.skip("no cgroup v1 memory threshold notification on this kernel")
    woken = threading.Event()
    notifier = ThresholdNotifier(woken.set)
    with temp_cgroup("skiff-memcg-") as cg:
        mem = CGROUP_ROOT / "memory" / cg.name
        usage = int((mem / "memory.usage_in_bytes").read_text())
        assert notifier.arm(mem, usage + (32 << 20))
        assert notifier.arm(mem, usage + (32 << 20) + 4096)  # within the slack: kept as is
        assert not woken.is_set()
        proc = subprocess.Popen(
            ["sh", "-c", f"echo $$ > {mem}/cgroup.procs && exec {sys.executable} -c "
             "'import sys; b = bytearray(64 << 20); sys.stdin.read()'"],
            stdin=subprocess.PIPE,
        )  # fmt: skip
        try:
            assert woken.wait(15), "no notification after 64 MiB were allocated"
        finally:
            proc.kill()
            proc.wait()
            notifier.disarm()
