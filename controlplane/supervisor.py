"""Child processes kept running, as the kubelet keeps static pods running.

`skiff controlplane --component-processes` runs each component (scheduler,
batch scheduler, controller manager) as a child process of its own, as
kubeadm runs kube-scheduler and kube-controller-manager beside
kube-apiserver, so that they use more than the one core the control
plane's process gets (its GIL). A `Supervisor` starts them, relays each
one's output to this process's stderr line by line with its name in front,
logs each exit and starts the process again after a backoff (doubling from
`backoff` up to `max_backoff`, back to `backoff` once a child has run for
`reset_after` seconds, as the kubelet's crash-loop backoff does), and on
`stop()` sends SIGTERM, then SIGKILL to what is left after `grace` seconds.

No child outlives this process: each inherits the read end of a pipe
whose only write end stays here (the "lifeline"; its number is in the
child's environment under LIFELINE_ENV). When this process exits, however
it dies, the kernel closes the write end, the child reads end of file and
stops (see controlplane/client/component.py). Signals go to the pids this
supervisor started, and only while it has not reaped them.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO

from controlplane.client.component import LIFELINE_ENV
from machinery import onecpu

log = logging.getLogger("skiff.controlplane.supervisor")


@dataclass(frozen=True)
class ProcessSpec:
    """One child: its name (in logs and in front of its output) and command."""

    name: str
    argv: Sequence[str]
    env: Mapping[str, str] = field(default_factory=dict)  # added to this process's


@dataclass
class _Child:
    spec: ProcessSpec
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    thread: threading.Thread | None = None


class Supervisor:
    """Runs each ProcessSpec as a child process until `stop()`, restarting it when it exits."""

    def __init__(
        self,
        specs: Sequence[ProcessSpec],
        grace: float = 10.0,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        reset_after: float = 60.0,
        output: IO[bytes] | None = None,
    ) -> None:
        names = [s.name for s in specs]
        if len(set(names)) != len(names):
            raise ValueError(f"supervisor: duplicate process names in {names}")
        self.grace = grace
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.reset_after = reset_after
        self._output = output if output is not None else sys.stderr.buffer
        self._output_lock = threading.Lock()
        self._children = [_Child(s) for s in specs]
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._lifeline_r, self._lifeline_w = os.pipe()  # both close-on-exec

    def start(self) -> None:
        """Start every child now; each is watched (and restarted) by a thread of its own."""
        for child in self._children:
            with self._lock:
                self._spawn(child)
            child.thread = threading.Thread(
                target=self._watch, args=(child,), name=f"supervise-{child.spec.name}", daemon=True
            )
            child.thread.start()

    def pids(self) -> dict[str, int]:
        """The running children's pids by name (a child between restarts is absent)."""
        with self._lock:
            return {
                c.spec.name: c.proc.pid
                for c in self._children
                if c.proc is not None and c.proc.returncode is None
            }

    def starts(self, name: str) -> int:
        """How many times the child `name` has been started."""
        return next(c.starts for c in self._children if c.spec.name == name)

    def stop(self) -> None:
        """SIGTERM to every child (in reverse start order), SIGKILL to those
        left after the grace; reap them all. They stop side by side: none
        waits for another, only the control plane waits for them."""
        with self._lock:
            if self._stopping.is_set():
                return
            self._stopping.set()  # no restart from here on
            procs = [c.proc for c in reversed(self._children) if c.proc is not None]
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)  # by pid, and only one not yet reaped
        deadline = time.monotonic() + self.grace
        for proc in procs:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("pid=%d did not stop within %.0fs: SIGKILL", proc.pid, self.grace)
                proc.kill()
                proc.wait()
        for child in self._children:
            if child.thread is not None:
                child.thread.join(timeout=5)
        for fd in (self._lifeline_w, self._lifeline_r):
            os.close(fd)

    # ---- one child ------------------------------------------------------------

    def _spawn(self, child: _Child) -> None:
        """Start `child`'s process (the caller holds the lock)."""
        env = dict(os.environ)
        env.update(child.spec.env)
        env[LIFELINE_ENV] = str(self._lifeline_r)
        with onecpu.spawning():  # the child gets every CPU we had, not our one
            proc = subprocess.Popen(
                list(child.spec.argv),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
                pass_fds=(self._lifeline_r,),
            )
        child.proc = proc
        child.starts += 1
        log.info("component=%s pid=%d started", child.spec.name, proc.pid)
        threading.Thread(
            target=self._relay, args=(child.spec.name, proc), name=f"log-{child.spec.name}",
            daemon=True,
        ).start()  # fmt: skip

    def _relay(self, name: str, proc: subprocess.Popen[bytes]) -> None:
        """Copy the child's output to ours, each line behind the child's name."""
        assert proc.stdout is not None
        prefix = f"{name}: ".encode()
        with proc.stdout:
            for line in proc.stdout:
                with self._output_lock:
                    try:
                        self._output.write(prefix + line if line.endswith(b"\n") else
                                           prefix + line + b"\n")  # fmt: skip
                        self._output.flush()
                    except (OSError, ValueError):  # our stderr closed: keep draining
                        pass

    def _watch(self, child: _Child) -> None:
        delay = self.backoff
        while True:
            proc = child.proc
            assert proc is not None
            started = time.monotonic()
            code = proc.wait()
            if self._stopping.is_set():
                return
            ran = time.monotonic() - started
            if ran >= self.reset_after:
                delay = self.backoff
            how = f"signal {-code}" if code < 0 else f"status {code}"
            log.warning("component=%s pid=%d exited (%s) after %.1fs; restarting in %.1fs",
                        child.spec.name, proc.pid, how, ran, delay)  # fmt: skip
            if self._stopping.wait(delay):
                return
            delay = min(delay * 2, self.max_backoff)
            with self._lock:
                if self._stopping.is_set():
                    return
                try:
                    self._spawn(child)
                except OSError as err:  # e.g. out of processes: try again later
                    log.error("component=%s cannot start: %s", child.spec.name, err)
                    child.proc = proc  # the exited one: wait() returns at once
