"""The runtime's side of the monitor zygote (runtime.process.monitor.zygote):
a process that forks the containers' monitors so that they share its pages,
and dials into pod network namespaces for port-forward.

It runs only while it is used, as containerd starts a shim only for a
container: the runtime listens on its socket from start, starts the zygote
at the first request, and the zygote exits once no request came for `idle`
seconds (IDLE, 60 s: a burst of pods, or a pod's sandbox and its
containers, find it running; a node at rest holds no zygote and its
~12 MB). The monitors it forked do not need it: they are their own
processes from the fork on, and keep sharing their pages with one another.

The runtime holds the listening socket, so a request is never lost to a
zygote that exits: a connection it did not accept waits in the backlog for
the next one. A keeper thread starts the zygote (the zygote's death signal
is tied to the thread that started it), waits for it to exit, and starts
another at once when a connection is already waiting; requests connect
under the same lock, so either the keeper sees their connection or they see
that no zygote runs and start one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import socket
import subprocess
import sys
import threading
from pathlib import Path

log = logging.getLogger(__name__)

IDLE = 60.0  # seconds without a request before the zygote exits
# The zygote imports the monitor as a module instead of running it as a
# script: measured, it then rests at 13.1 MB RSS instead of 15.7 (and every
# monitor it forks inherits that). -I: no script dir or cwd on sys.path.
ZYGOTE_MAIN = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from runtime.process.monitor import main; sys.exit(main(sys.argv[2:]))"
)
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


class Zygote:
    """The zygote's socket under `state_dir`, and the zygote process while
    it runs (see the module docstring). `listen` at the runtime's start,
    `stop` at its end; `connect` and `dial` start the zygote when none runs."""

    def __init__(self, state_dir: Path, log_path: Path, idle: float = IDLE) -> None:
        self.dir = state_dir
        self.log_path = log_path
        self.idle = idle
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._keeper: threading.Thread | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._stopping = False
        self.starts = 0  # zygotes started so far

    def _path(self, dfd: int) -> str:
        return f"/proc/self/fd/{dfd}/zygote.sock"

    def listen(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            (self.dir / "zygote.sock").unlink()
        dfd = os.open(self.dir, os.O_DIRECTORY | os.O_RDONLY | os.O_CLOEXEC)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(self._path(dfd))
            os.chmod(self.dir / "zygote.sock", 0o600)
            sock.listen(64)
        except BaseException:
            sock.close()
            raise
        finally:
            os.close(dfd)
        self._sock = sock

    @property
    def pid(self) -> int | None:
        """The running zygote's pid, None when none runs."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def usable(self) -> bool:
        return self._sock is not None and not self._stopping

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            proc, keeper = self._proc, self._keeper
            if proc is not None and proc.poll() is None:
                proc.kill()
        if keeper is not None:
            keeper.join(10)
        if self._sock is not None:
            self._sock.close()

    def connect(self, request: dict[str, object], timeout: float) -> socket.socket:
        """A connection to the zygote with `request` sent on it (one JSON
        line); a zygote is started when none runs. Raises OSError."""
        dfd = os.open(self.dir, os.O_DIRECTORY | os.O_RDONLY | os.O_CLOEXEC)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(timeout)
            with self._lock:
                if self._stopping or self._sock is None:
                    raise OSError("the monitor zygote is stopped")
                if self._keeper is None:
                    self._start_keeper()
                s.connect(self._path(dfd))
            s.sendall((json.dumps(request) + "\n").encode())
        except BaseException:
            s.close()
            raise
        finally:
            os.close(dfd)
        return s

    def _start_keeper(self) -> None:
        """(Under the lock.) A keeper thread with a zygote started by it."""
        started = threading.Event()
        failed: list[OSError] = []
        keeper = threading.Thread(
            target=self._keep, args=(started, failed), name="zygote-keeper", daemon=True
        )
        keeper.start()
        started.wait()
        if failed:
            raise failed[0]
        self._keeper = keeper

    def _keep(self, started: threading.Event, failed: list[OSError]) -> None:
        try:
            proc = self._spawn()
        except OSError as exc:
            failed.append(exc)
            started.set()
            return
        started.set()
        while True:
            proc.wait()
            with self._lock:
                if self._stopping or not self._waiting():
                    self._proc = None
                    self._keeper = None
                    return
                try:
                    proc = self._spawn()
                except OSError as exc:
                    log.error("monitor zygote not restarted: %s", exc)
                    self._proc = None
                    self._keeper = None
                    return

    def _waiting(self) -> bool:
        """Whether a connection waits on the socket, not yet accepted."""
        assert self._sock is not None
        poll = select.poll()
        poll.register(self._sock, select.POLLIN)
        return bool(poll.poll(0))

    def _spawn(self) -> subprocess.Popen[bytes]:
        assert self._sock is not None
        fd = self._sock.fileno()
        argv = [sys.executable, "-I", "-S", "-B", "-c", ZYGOTE_MAIN, str(PACKAGE_ROOT),
                "zygote", str(fd), str(self.idle)]  # fmt: skip
        with open(self.log_path, "ab") as err:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                pass_fds=[fd],
                start_new_session=True,
            )
        self._proc = proc
        self.starts += 1
        return proc
