"""machinery.onecpu on real threads: a process's threads kept on one CPU,
threads started later too, a child started in `spawning()` with the CPUs
the process had, a move to another CPU taking every thread along, and
`stop` giving every thread its CPUs back. Each case runs in a child Python
process of its own, so the test process's threads are never pinned."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="pinning to one CPU needs a process allowed 2 or more"
)

# Runs in the child: pins, starts a thread, starts children in and out of
# spawning(), forces a move, stops; prints what each thread was allowed.
SCRIPT = r"""
import json, os, subprocess, sys, threading
from machinery import onecpu

def threads():
    return {t: sorted(os.sched_getaffinity(int(t))) for t in os.listdir("/proc/self/task")}

def child():
    out = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)

report = {"before": sorted(os.sched_getaffinity(0))}
cpu = onecpu.OneCpu(interval=3600)
report["started"] = cpu.start()
report["cpu"] = cpu.cpu
report["usable"] = sorted(onecpu.usable())
go, done = threading.Event(), threading.Event()
later = threading.Thread(target=lambda: (go.set(), done.wait()))
later.start()
go.wait()
report["pinned"] = threads()
with onecpu.spawning():
    report["child_spawning"] = child()
report["child_plain"] = child()
report["after_spawning"] = threads()
other = max(c for c in cpu.allowed if c != cpu.cpu)
onecpu.busy_between = lambda before, after: {c: (1.0 if c == cpu.cpu else 0.0) for c in cpu.allowed}
cpu.rebalance()
report["moved_to"] = cpu.cpu
report["expected"] = other
report["moved"] = threads()
report["second"] = onecpu.OneCpu().start()
cpu.stop()
report["stopped"] = threads()
with onecpu.spawning():
    report["child_after_stop"] = child()
done.set()
later.join()
print(json.dumps(report))
"""


def run_child() -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    report: dict[str, Any] = json.loads(out.stdout)
    return report


def test_threads_are_kept_on_one_cpu_and_children_started_in_spawning_get_every_cpu() -> None:
    r = run_child()
    before = r["before"]
    assert r["started"] is True
    cpu = r["cpu"]
    assert cpu in before
    # Every thread, the one started after start() too, is on that CPU alone.
    pinned = r["pinned"]
    assert isinstance(pinned, dict) and len(pinned) >= 3  # main, one-cpu, later
    assert all(allowed == [cpu] for allowed in pinned.values()), pinned
    # A child inherits its starting thread's CPUs: every CPU from spawning(), one without.
    assert r["child_spawning"] == before
    assert r["child_plain"] == [cpu]
    # What the process may use is still every CPU (component processes are chosen by it).
    assert r["usable"] == before
    # The thread that started the child is pinned again afterwards.
    assert all(allowed == [cpu] for allowed in r["after_spawning"].values())


def test_a_move_takes_every_thread_and_stop_gives_the_cpus_back() -> None:
    r = run_child()
    assert r["moved_to"] == r["expected"] != r["cpu"]
    assert all(allowed == [r["expected"]] for allowed in r["moved"].values())
    assert r["second"] is False  # one per process
    assert all(allowed == r["before"] for allowed in r["stopped"].values())
    assert r["child_after_stop"] == r["before"]
