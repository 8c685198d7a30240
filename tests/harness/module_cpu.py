"""CPU time per test module, the daemons each test starts included (opt-in).

`SKIFF_TEST_CPU=<dir> pytest ...` puts each pytest process (every xdist
worker, and the controller with the registry it shares) in a cgroup of its
own for CPU accounting (v1's cpuacct hierarchy only, so no limit or memory
controller changes; on v2 a leaf of the root with no controller enabled).
The servers, agents, runtimes, etcd and registries a test starts inherit
it, so the cgroup's CPU time before and after a test is what the test cost
the machine. Each process appends to `<dir>/<worker>.jsonl` as it goes (a
run stopped early still reports): per test the cgroup's CPU seconds, the
pytest process's own (in-process servers and the test itself) and the wall
seconds; at its end the cgroup's total and what was left running in it. `python -m tests.harness.module_cpu <dir>`
prints the modules by CPU. Containers a runtime moves into cgroups of its
own are not counted; neither is anything where no cgroup can be made (then
only the pytest process's own CPU is recorded).

Off unless the variable is set.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from bench.host_usage import cpu_hierarchy, cpu_usage_s, own_cgroup
from tests.harness.cgroup import procs, try_rmdir
from tests.harness.wait import wait_for

ENV = "SKIFF_TEST_CPU"
PARENT = "skiff-test-cpu"


def _self_cpu() -> float:
    t = os.times()
    return t.user + t.system


class ModuleCpu:
    def __init__(self, out_dir: Path, worker: str) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        self.out = out_dir / f"{worker}.jsonl"
        self.name = f"{PARENT}/{worker}-{os.getpid()}"
        self.home: Path | None = None
        self.path: Path | None = None
        found = cpu_hierarchy()
        home = own_cgroup()
        if found is None or home is None:
            return
        path = found[0] / self.name
        with contextlib.suppress(OSError):
            path.mkdir(parents=True, exist_ok=True)
            (path / "cgroup.procs").write_text(str(os.getpid()))
            self.home, self.path = home, path
        self.start = self._cg_cpu()

    def _cg_cpu(self) -> float:
        return cpu_usage_s(self.name) if self.path is not None else float("nan")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, None, None]:
        cg, own, wall = self._cg_cpu(), _self_cpu(), time.monotonic()
        yield
        self._write(
            {
                "nodeid": item.nodeid,
                "cpu": round(self._cg_cpu() - cg, 3),
                "own": round(_self_cpu() - own, 3),
                "wall": round(time.monotonic() - wall, 3),
            }
        )

    def _write(self, row: dict[str, Any]) -> None:
        with self.out.open("a") as f:
            f.write(json.dumps(row) + "\n")

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        left: list[str] = []
        total = self._cg_cpu() - self.start if self.path is not None else float("nan")
        if self.home is not None and self.path is not None:
            with contextlib.suppress(OSError):
                (self.home / "cgroup.procs").write_text(str(os.getpid()))
            path = self.path
            left = [_comm(p) for p in procs(path)]
            if not left:
                # The last exits may take a moment to leave the cgroup.
                with contextlib.suppress(OSError, AssertionError):
                    wait_for(lambda: try_rmdir(path), timeout=5, message=f"rmdir {path}")
                try_rmdir(path.parent)  # in use while another run is
        self._write({"total_cpu": round(total, 3), "left_running": left})


def _comm(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/comm").read_text().strip()
    return str(pid)


def register(config: pytest.Config) -> None:
    out = os.environ.get(ENV)
    if not out:
        return
    worker = getattr(config, "workerinput", {}).get("workerid", "controller")
    config.pluginmanager.register(ModuleCpu(Path(out), worker), "skiff-module-cpu")


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def report(out_dir: Path, top: int) -> str:
    mods: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    totals: list[str] = []
    for f in sorted(out_dir.glob("*.jsonl")):
        for line in f.read_text().splitlines():
            row = json.loads(line)
            if "nodeid" not in row:
                totals.append(
                    f"{f.stem}: {row['total_cpu']:.1f} CPU s, left running {row['left_running']}"
                )
                continue
            m = mods[module_of(row["nodeid"])]
            m[0] += 1
            m[1] += row["cpu"]
            m[2] += row["own"]
            m[3] += row["wall"]
    lines = [f"{'cpu s':>8} {'own s':>8} {'daemons':>8} {'wall s':>8} {'tests':>6}  module"]
    for name, (n, cpu, own, wall) in sorted(mods.items(), key=lambda kv: -kv[1][1])[:top]:
        lines.append(f"{cpu:8.1f} {own:8.1f} {cpu - own:8.1f} {wall:8.1f} {int(n):6d}  {name}")
    cpu_sum = sum(m[1] for m in mods.values())
    lines.append(f"{cpu_sum:8.1f} CPU s over {sum(int(m[0]) for m in mods.values())} tests")
    return "\n".join([*lines, *totals])


def main() -> None:
    p = argparse.ArgumentParser(description="CPU seconds per test module from a SKIFF_TEST_CPU run")
    p.add_argument("dir", type=Path)
    p.add_argument("--top", type=int, default=30)
    a = p.parse_args()
    print(report(a.dir, a.top))


if __name__ == "__main__":
    main()
