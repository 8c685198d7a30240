"""One CPU at a time for a process whose threads share one GIL.

A CPython process runs Python on one CPU at a time, however many threads
it has; but the kernel spreads those threads over every CPU the process may
use, so each hand-over of the GIL from a thread on one CPU to a thread on
another is a cross-CPU wake-up, and the objects the threads share travel
between the CPUs' caches. Measured in bench.volcano, the API server spent a
third of its CPU so: with its threads on one CPU it did the same work in
7.2-9.6 CPU seconds instead of 11.5-12.5.

`OneCpu` keeps every thread of this process on one of the CPUs it may use
(its affinity when started): the one it runs on at start, then, every
`interval`, the CPU with the least work of other processes, when that is at
least `margin` of a CPU less than the current one carries (a process pinned
to a busy CPU moves within an interval; the kernel no longer moves it).
Threads started later inherit the pin from the thread that starts them;
each pass also pins any thread it has not seen. A child process inherits
the affinity of the thread that starts it, so a thread starting one does it
inside `spawning()`, which gives that thread (only) the process's former
CPUs meanwhile. `stop` gives every thread those CPUs back.

One per process (affinity is the process's): `start` registers it for
`spawning`, which does nothing when no OneCpu runs, and for `usable`, the
CPUs the process may use (what a decision on how much parallelism to use
asks, not a pinned thread's affinity).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator

from machinery.wakeloop import WakeLoop

log = logging.getLogger(__name__)

_TICKS = os.sysconf("SC_CLK_TCK")

_running: OneCpu | None = None
_running_lock = threading.Lock()


def cpu_ticks(stat: str) -> dict[int, tuple[int, int]]:
    """/proc/stat's per-CPU lines: cpu -> (busy ticks, all ticks) since boot
    (idle and iowait are not busy; guest time is already in user)."""
    out: dict[int, tuple[int, int]] = {}
    for line in stat.splitlines():
        if not line.startswith("cpu") or not line[3:4].isdigit():
            continue
        name, *fields = line.split()
        ticks = [int(f) for f in fields[:8]]
        if len(ticks) < 5:
            continue
        total = sum(ticks)
        out[int(name[3:])] = (total - ticks[3] - ticks[4], total)
    return out


def busy_between(
    before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]]
) -> dict[int, float]:
    """Each CPU's busy share (0..1) between two cpu_ticks readings; a CPU
    missing from either (gone offline) is left out."""
    out: dict[int, float] = {}
    for cpu, (busy, total) in after.items():
        if cpu not in before:
            continue
        elapsed = total - before[cpu][1]
        out[cpu] = (busy - before[cpu][0]) / elapsed if elapsed > 0 else 0.0
    return out


def choose(
    current: int, allowed: Iterable[int], busy: dict[int, float], ours: float, margin: float
) -> int:
    """The CPU to be on next: `current` unless another allowed CPU carries at
    least `margin` of a CPU less of other processes' work. `busy` is each
    CPU's busy share over the last interval, `ours` this process's share of
    one CPU over it (all of it on `current`)."""
    others = {c: busy[c] for c in sorted(allowed) if c in busy}
    if not others:
        return current
    if current in others:
        others[current] = max(0.0, others[current] - ours)
    best = min(others, key=lambda c: others[c])
    if current not in others or others[current] - others[best] >= margin:
        return best
    return current


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _own_ticks() -> int:
    """This process's CPU (user and system, every thread) in clock ticks."""
    fields = _read("/proc/self/stat").rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _this_cpu() -> int:
    """The CPU this thread last ran on (/proc/thread-self/stat's `processor`)."""
    return int(_read("/proc/thread-self/stat").rsplit(")", 1)[1].split()[36])


def _threads() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/task")}


class OneCpu:
    """This process's threads on one CPU, re-chosen every `interval` (see above)."""

    def __init__(self, interval: float = 1.0, margin: float = 0.5) -> None:
        self.interval = interval
        self.margin = margin
        self.allowed = frozenset(os.sched_getaffinity(0))
        self.cpu: int | None = None
        self._pinned: set[int] = set()
        self._spawning: set[int] = set()
        self._lock = threading.Lock()
        self._loop = WakeLoop()
        self._last = (cpu_ticks(""), 0, 0.0)

    def start(self) -> bool:
        """Pin this process's threads; False (and nothing done) where it may
        use one CPU only, or another OneCpu runs."""
        global _running
        if len(self.allowed) < 2:
            return False
        with _running_lock:
            if _running is not None:
                return False
            _running = self
        try:
            here = _this_cpu()
            with self._lock:
                self._move(here if here in self.allowed else min(self.allowed))
        except OSError as err:  # no /proc, or a CPU gone meanwhile: the kernel places us
            log.warning("threads not kept on one CPU: %s", err)
            self._unpin()
            with _running_lock:
                _running = None
            return False
        self._last = (cpu_ticks(_read("/proc/stat")), _own_ticks(), time.monotonic())
        self._loop.start(self._run, "one-cpu")
        log.info("threads on CPU %s (of %s), re-chosen every %.1fs", self.cpu,
                 ",".join(map(str, sorted(self.allowed))), self.interval)  # fmt: skip
        return True

    def stop(self) -> None:
        """Every thread back on the CPUs the process had before start."""
        self._loop.stop()
        self._unpin()

    def _unpin(self) -> None:
        global _running
        with self._lock:
            if self.cpu is None:
                return
            self.cpu = None
            self._pinned.clear()
            for tid in _threads():
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(tid, self.allowed)
        with _running_lock:
            if _running is self:
                _running = None

    def _run(self) -> None:
        while not self._loop.stopped():
            self._loop.wait(self.interval)
            if self._loop.stopped():
                return
            try:
                self.rebalance()
            except OSError as err:  # a CPU taken away (cpuset, hotplug): the kernel places us
                log.warning("threads no longer kept on one CPU: %s", err)
                self._unpin()
                return

    def rebalance(self) -> None:
        """One pass: move to a CPU with less other work if there is one, and
        pin threads not pinned yet."""
        now = (cpu_ticks(_read("/proc/stat")), _own_ticks(), time.monotonic())
        (ticks0, own0, t0), self._last = self._last, now
        elapsed = now[2] - t0
        ours = (now[1] - own0) / _TICKS / elapsed if elapsed > 0 else 0.0
        with self._lock:
            if self.cpu is None:
                return
            target = choose(self.cpu, self.allowed, busy_between(ticks0, now[0]), ours,
                            self.margin)  # fmt: skip
            if target != self.cpu:
                log.info("threads moved from CPU %d to CPU %d", self.cpu, target)
                self._move(target)
            else:
                self._pin_new()

    def _move(self, cpu: int) -> None:
        self.cpu = cpu
        self._pinned.clear()
        self._pin_new()

    def _pin_new(self) -> None:
        assert self.cpu is not None
        alive = _threads()
        self._pinned &= alive
        for tid in alive - self._pinned - self._spawning:
            try:
                os.sched_setaffinity(tid, {self.cpu})
            except ProcessLookupError:  # ended meanwhile
                continue
            self._pinned.add(tid)

    @contextlib.contextmanager
    def _released(self) -> Iterator[None]:
        tid = threading.get_native_id()
        with self._lock:
            self._spawning.add(tid)
            self._pinned.discard(tid)
            os.sched_setaffinity(0, self.allowed)
        try:
            yield
        finally:
            with self._lock:
                self._spawning.discard(tid)
                if self.cpu is not None:
                    os.sched_setaffinity(0, {self.cpu})
                    self._pinned.add(tid)


def usable() -> frozenset[int]:
    """The CPUs this process may use: those it had before a running OneCpu
    pinned its threads (a thread's own affinity says one CPU then)."""
    running = _running
    return running.allowed if running is not None else frozenset(os.sched_getaffinity(0))


@contextlib.contextmanager
def spawning() -> Iterator[None]:
    """A child process started in here gets the CPUs this process had before
    its threads were pinned (only the calling thread is unpinned meanwhile)."""
    running = _running
    if running is None:
        yield
        return
    with running._released():
        yield
