"""An in-memory `runtime.host.Host` for handler tests: it records what the
handlers made (mounts, namespace pins, cgroups, processes) and can fail any
one step. Directories and files are real (under the test's temp dir), so a
test can also check that none are left behind.

Every call that changes the host is a step, numbered from 1; `fail_at = n`
makes step n raise what the real host would (OSError, or MonitorError for a
monitor). Queries (alive, start_time, wait_exit) and signals are not steps.
A fake monitor dies when its report stream is closed before it reported (the
real one dies of EPIPE writing its report).
"""

from __future__ import annotations

import errno
import json
import shutil
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.linux import cgroups
from runtime.process.spawn import MonitorError


class InjectedFailure(OSError):
    pass


class InjectedMonitorFailure(MonitorError):
    pass


@dataclass
class FakeProcess:
    pid: int
    role: str
    cgroup: str
    alive: bool = True


@dataclass
class FakeHost:
    fail_at: int = 0
    steps: int = 0
    log: list[str] = field(default_factory=list)
    mounts: set[Path] = field(default_factory=set)
    pins: set[Path] = field(default_factory=set)
    cgroups_made: set[str] = field(default_factory=set)
    procs: dict[int, FakeProcess] = field(default_factory=dict)
    next_pid: int = 1000

    # --- bookkeeping -------------------------------------------------------------
    def step(self, name: str, monitor: bool = False) -> None:
        self.steps += 1
        self.log.append(name)
        if self.steps == self.fail_at:
            if monitor:
                raise InjectedMonitorFailure(f"injected failure of step {self.steps} ({name})")
            raise InjectedFailure(errno.EIO, f"injected failure of step {self.steps} ({name})")

    def live(self) -> set[int]:
        return {p.pid for p in self.procs.values() if p.alive}

    def _proc(self, role: str, cgroup: str) -> FakeProcess:
        self.next_pid += 1
        p = FakeProcess(self.next_pid, role, cgroup)
        self.procs[p.pid] = p
        return p

    # --- files ---------------------------------------------------------------------
    def make_dir(self, path: Path, mode: int = 0o755) -> None:
        self.step(f"make_dir {path.name}")
        path.mkdir(mode=mode, parents=True)

    def ensure_dir(self, path: Path, mode: int = 0o755) -> bool:
        if path.is_dir():
            return False
        self.step(f"ensure_dir {path.name}")
        path.mkdir(mode=mode, parents=True)
        return True

    def write_file(self, path: Path, data: str, mode: int = 0o644) -> None:
        self.step(f"write_file {path.name}")
        path.write_text(data)

    def remove_tree(self, path: Path) -> None:
        if any(m == path or path in m.parents for m in self.mounts | self.pins):
            raise OSError(errno.EBUSY, f"{path} has mounts under it")
        shutil.rmtree(path, ignore_errors=True)

    # --- mounts and namespaces -------------------------------------------------------
    def mount_tmpfs(self, target: Path, flags: int, options: str) -> None:
        self.step(f"mount_tmpfs {target.name}")
        if not target.is_dir():
            raise OSError(errno.ENOENT, str(target))
        self.mounts.add(target)

    def unmount(self, target: Path) -> None:
        self.step(f"unmount {target.name}")
        self.mounts.discard(target)

    def pin_namespace(self, pid: int, kind: str, target: Path) -> None:
        self.step(f"pin {kind}")
        if not self.procs.get(pid, FakeProcess(0, "", "", False)).alive:
            raise OSError(errno.ENOENT, f"/proc/{pid}/ns/{kind}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
        self.pins.add(target)

    def unpin_namespace(self, target: Path) -> None:
        self.step(f"unpin {target.name}")
        self.pins.discard(target)
        target.unlink(missing_ok=True)

    # --- cgroups -------------------------------------------------------------------
    def cgroup(self, rel: str) -> cgroups.Cgroup:
        return FakeCgroup(self, rel)

    # --- processes -------------------------------------------------------------------
    def _cgroup_of(self, spec: dict[str, Any]) -> str:
        procs = spec.get("cgroup_procs") or ["fake:"]
        return str(procs[0]).removeprefix("fake:")

    def start_monitor(
        self, mode: str, spec: dict[str, Any], spec_path: Path, log_path: Path
    ) -> FakePending:
        self.step(f"start_monitor {mode}", monitor=True)
        spec_path.write_text(json.dumps(spec))
        return FakePending(self, self._proc("sandbox-monitor", self._cgroup_of(spec)))

    def spawn_monitor(self, mode: str, spec_path: Path, log_path: Path) -> dict[str, Any]:
        self.step(f"spawn_monitor {mode}", monitor=True)
        spec = json.loads(spec_path.read_text())
        cg = self._cgroup_of(spec)
        mon = self._proc("container-monitor", cg)
        init = self._proc("container-init", cg)
        return {"pid": mon.pid, "init_pid": init.pid}

    def call_monitor(
        self, state_dir: Path, request: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        self.step(f"call_monitor {request.get('op')}", monitor=True)
        if request.get("op") == "start":
            return {"started_at": 1, "user": {"uid": 0, "gid": 0}}
        return {}

    def dial(self, netns: str, port: int) -> socket.socket:
        raise OSError(errno.ECONNREFUSED, "the fake host dials nothing")

    def kill(self, pid: int, sig: int) -> None:
        p = self.procs.get(pid)
        if p is not None and sig in (9, 15):
            p.alive = False

    def alive(self, pid: int, started: int) -> bool:
        p = self.procs.get(pid)
        return p is not None and p.alive

    def start_time(self, pid: int) -> int:
        return pid * 7 if self.alive(pid, 0) else 0

    def wait_exit(self, pid: int, timeout: float) -> bool:
        return not self.alive(pid, 0)


class FakePending:
    def __init__(self, host: FakeHost, proc: FakeProcess) -> None:
        self.host = host
        self.proc = proc
        self.reported = False

    def first(self) -> dict[str, Any]:
        self.host.step("monitor first report", monitor=True)
        self.reported = True
        return {"pid": self.proc.pid}

    def finish(self) -> dict[str, Any]:
        try:
            self.host.step("monitor final report", monitor=True)
            return {}
        finally:
            self.close()

    def close(self) -> None:
        if not self.reported:
            self.proc.alive = False


class FakeCgroup:
    version = 2

    def __init__(self, host: FakeHost, rel: str) -> None:
        self.host = host
        self.rel = rel

    @property
    def procs_files(self) -> list[str]:
        return [f"fake:{self.rel}"]

    @property
    def self_join_files(self) -> list[str]:
        return []

    def create(self) -> None:
        self.host.step("cgroup create")
        self.host.cgroups_made.add(self.rel)

    def add(self, pid: int) -> None:
        self.host.step("cgroup add")

    def apply(self, res: cgroups.Resources) -> None:
        self.host.step("cgroup apply")

    def allow_devices(self, rules: list[str]) -> None:
        self.host.step("cgroup allow_devices")

    def stats(self) -> cgroups.Stats:
        raise OSError(errno.ENOENT, "no stats in the fake")

    def oom_kills(self) -> int:
        return 0

    def pids(self) -> list[int]:
        return [p.pid for p in self.host.procs.values() if p.alive and p.cgroup == self.rel]

    def exists(self) -> bool:
        return self.rel in self.host.cgroups_made

    def kill_all(self, timeout: float = 5.0) -> None:
        self.host.step("cgroup kill_all")
        for p in self.host.procs.values():
            if p.cgroup == self.rel:
                p.alive = False

    def destroy(self) -> None:
        self.host.step("cgroup destroy")
        if self.pids():
            raise OSError(errno.EBUSY, f"cgroup {self.rel} still has processes")
        self.host.cgroups_made.discard(self.rel)
