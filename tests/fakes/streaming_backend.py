"""A StreamingBackend made of plain host processes, for tests only.

`HostProcessBackend` runs exec'd commands as host processes (with a pty when
a tty is asked for), keeps "containers" that are host processes whose stdio
it holds so they can be attached to, and dials ports on 127.0.0.1 in the
host's network namespace. It lets the streaming server be tested before and
without the real runtime. `skiff runtime` must never use it: it forks from
whatever thread calls it and ignores every kind of isolation.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import socket
import struct
import subprocess
import termios
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from runtime import errors
from runtime.streaming.backend import Session, Stdio, TermSize

_CHUNK = 32768
EOT = b"\x04"


def _close(fd: int | None) -> None:
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass


def _set_winsize(fd: int, width: int, height: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))


def _copy(src: int, dst: int, stop: int, eof: bytes = b"") -> None:
    """Copy src -> dst until EOF/EIO on src, an error on dst, or `stop` readable.
    Writes `eof` to dst on src's EOF (a tty's EOF character for stdin)."""
    poller = select.poll()
    poller.register(src, select.POLLIN)
    poller.register(stop, select.POLLIN)
    try:
        while True:
            ready = dict(poller.poll())
            if ready.get(src):
                data = os.read(src, _CHUNK)
                if not data:
                    if eof:
                        os.write(dst, eof)
                    return
                view = memoryview(data)
                while view:
                    view = view[os.write(dst, view) :]
            elif ready.get(stop):
                return
    except OSError:
        return


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


class HostExec:
    """One exec'd host process (its own session and process group)."""

    def __init__(
        self,
        cmd: Sequence[str],
        tty: bool,
        stdio: Stdio,
        env: dict[str, str] | None,
        size: TermSize | None = None,
    ) -> None:
        self._threads: list[threading.Thread] = []
        self._out_thread: threading.Thread | None = None
        self._owned: list[int] = []
        self._master: int | None = None
        self._lock = threading.Lock()
        self._done = False
        self._stop_r, self._stop_w = os.pipe()
        try:
            self._start(cmd, tty, stdio, env, size)
        except BaseException:
            _close(self._stop_r)
            _close(self._stop_w)
            raise

    def _start(
        self,
        cmd: Sequence[str],
        tty: bool,
        stdio: Stdio,
        env: dict[str, str] | None,
        size: TermSize | None,
    ) -> None:
        if not tty:
            self.proc = subprocess.Popen(
                list(cmd),
                stdin=stdio.stdin if stdio.stdin is not None else subprocess.DEVNULL,
                stdout=stdio.stdout if stdio.stdout is not None else subprocess.DEVNULL,
                stderr=stdio.stderr if stdio.stderr is not None else subprocess.DEVNULL,
                start_new_session=True,
                env=env,
            )
            return
        master, slave = os.openpty()
        self._master = master
        if size is not None:
            _set_winsize(master, *size)
        try:
            self.proc = subprocess.Popen(
                list(cmd), stdin=slave, stdout=slave, stderr=slave, start_new_session=True, env=env
            )
        except BaseException:
            _close(master)
            raise
        finally:
            _close(slave)
        if stdio.stdout is not None:
            out = os.dup(stdio.stdout)
            self._owned.append(out)
            self._out_thread = self._spawn(_copy, master, out, self._stop_r)
        if stdio.stdin is not None:
            inp = os.dup(stdio.stdin)
            self._owned.append(inp)
            self._spawn(_copy, inp, master, self._stop_r, EOT)

    def _spawn(self, target: Callable[..., None], *args: object) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self._threads.append(thread)
        return thread

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait(self) -> int | None:
        code = self.proc.wait()
        if self._threads:
            # the output copy ends with EIO once the pty's last slave is gone;
            # stdin's copy ends when the server closes its pipe, or now.
            if self._out_thread is not None:
                self._out_thread.join(2.0)
            os.write(self._stop_w, b"x")
            for thread in self._threads:
                thread.join()
        with self._lock:
            if not self._done:
                self._done = True
                for fd in [*self._owned, self._master, self._stop_r, self._stop_w]:
                    _close(fd)
        return _exit_code(code)

    def resize(self, width: int, height: int) -> None:
        if self._master is not None and not self._done:
            try:
                _set_winsize(self._master, width, height)
            except OSError:
                pass

    def cancel(self) -> None:
        if self.proc.returncode is None:
            self.kill_group()

    def kill_group(self) -> None:
        """Kill what is left of the process group (background children too)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


@dataclass
class _Attachment:
    stdin: int | None
    stdout: int | None
    stderr: int | None
    done: threading.Event = field(default_factory=threading.Event)


class HostContainer:
    """A long-running host process standing in for a container, attachable."""

    def __init__(self, cmd: Sequence[str], tty: bool, stdin: bool, stdin_once: bool) -> None:
        self.tty = tty
        self.stdin_once = stdin_once
        self._lock = threading.Lock()
        self._attachments: list[_Attachment] = []
        self._threads: list[threading.Thread] = []
        self.exited = threading.Event()
        self.input: int | None
        outputs: list[tuple[int, str]]
        if tty:
            master, slave = os.openpty()
            self.proc = subprocess.Popen(
                list(cmd), stdin=slave, stdout=slave, stderr=slave, start_new_session=True
            )
            os.close(slave)
            self.input = master
            outputs = [(master, "stdout")]
            self._fds = [master]
        else:
            self.proc = subprocess.Popen(
                list(cmd),
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            assert self.proc.stdout is not None and self.proc.stderr is not None
            self.input = self.proc.stdin.fileno() if self.proc.stdin is not None else None
            outputs = [(self.proc.stdout.fileno(), "stdout"), (self.proc.stderr.fileno(), "stderr")]
            self._fds = []
        for fd, kind in outputs:
            thread = threading.Thread(target=self._fan_out, args=(fd, kind), daemon=True)
            thread.start()
            self._threads.append(thread)
        threading.Thread(target=self._reap, daemon=True).start()

    def _fan_out(self, fd: int, kind: str) -> None:
        while True:
            try:
                data = os.read(fd, _CHUNK)
            except OSError:
                data = b""
            if not data:
                return
            with self._lock:
                targets = [getattr(a, kind) for a in self._attachments]
            for target in targets:
                if target is None:
                    continue
                try:
                    os.write(target, data)
                except OSError:
                    pass

    def _reap(self) -> None:
        self.proc.wait()
        for thread in self._threads:
            thread.join()
        with self._lock:
            self.exited.set()
            attachments = list(self._attachments)
        for attachment in attachments:
            attachment.done.set()

    def attach(self, tty: bool, stdio: Stdio) -> HostAttach:
        with self._lock:  # _reap sets `exited` under this lock: no attachment is missed
            if self.exited.is_set():
                raise errors.FailedPrecondition("container is not running")
            attachment = _Attachment(
                None,
                os.dup(stdio.stdout) if stdio.stdout is not None else None,
                os.dup(stdio.stderr) if stdio.stderr is not None and not self.tty else None,
            )
            self._attachments.append(attachment)
        return HostAttach(
            self, attachment, os.dup(stdio.stdin) if stdio.stdin is not None else None
        )

    def detach(self, attachment: _Attachment) -> None:
        with self._lock:
            if attachment in self._attachments:
                self._attachments.remove(attachment)
        _close(attachment.stdout)
        _close(attachment.stderr)

    def stop(self) -> None:
        if self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.exited.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        for fd in self._fds:
            _close(fd)
        self._fds = []


class HostAttach:
    def __init__(
        self, container: HostContainer, attachment: _Attachment, stdin: int | None
    ) -> None:
        self._container = container
        self._attachment = attachment
        self._stop_r, self._stop_w = os.pipe()
        self._stdin_thread: threading.Thread | None = None
        self._stdin = stdin
        if stdin is not None and container.input is not None:
            self._stdin_thread = threading.Thread(target=self._copy_stdin, daemon=True)
            self._stdin_thread.start()

    def _copy_stdin(self) -> None:
        assert self._stdin is not None and self._container.input is not None
        eof = EOT if self._container.tty else b""
        _copy(self._stdin, self._container.input, self._stop_r, eof)
        if (
            self._container.stdin_once
            and not self._container.tty
            and self._container.proc.stdin is not None
            and not self._attachment.done.is_set()
        ):
            try:
                self._container.proc.stdin.close()
            except OSError:
                pass

    def wait(self) -> int | None:
        self._attachment.done.wait()
        os.write(self._stop_w, b"x")
        if self._stdin_thread is not None:
            self._stdin_thread.join()
        self._container.detach(self._attachment)
        _close(self._stdin)
        _close(self._stop_r)
        _close(self._stop_w)
        return None

    def resize(self, width: int, height: int) -> None:
        if self._container.tty and self._container.input is not None:
            try:
                _set_winsize(self._container.input, width, height)
            except OSError:
                pass

    def cancel(self) -> None:
        self._attachment.done.set()


@dataclass
class HostProcessBackend:
    """Exec, attach and port-forward against host processes and 127.0.0.1."""

    env: dict[str, str] | None = None
    running: set[str] = field(default_factory=set)  # container ids exec may target
    stopped: set[str] = field(default_factory=set)  # known but not running
    containers: dict[str, HostContainer] = field(default_factory=dict)
    execs: list[HostExec] = field(default_factory=list)
    sandboxes: set[str] = field(default_factory=set)

    def add_container(
        self,
        container_id: str,
        cmd: Sequence[str] | None = None,
        *,
        tty: bool = False,
        stdin: bool = True,
        stdin_once: bool = True,
    ) -> None:
        """Register a running container; with `cmd`, start it as an attachable process."""
        self.running.add(container_id)
        if cmd is not None:
            self.containers[container_id] = HostContainer(cmd, tty, stdin, stdin_once)

    def close(self) -> None:
        for container in self.containers.values():
            container.stop()
        for ex in self.execs:
            ex.kill_group()

    def _check(self, container_id: str) -> None:
        if container_id in self.stopped:
            raise errors.FailedPrecondition(f"container {container_id} is not running")
        if container_id not in self.running:
            raise errors.NotFound(f"container {container_id} not found")

    def exec(
        self,
        container_id: str,
        cmd: Sequence[str],
        tty: bool,
        stdio: Stdio,
        size: TermSize | None = None,
    ) -> Session:
        self._check(container_id)
        try:
            ex = HostExec(cmd, tty, stdio, self.env, size)
        except FileNotFoundError as exc:
            raise errors.InvalidArgument(f"executable not found: {exc.filename}") from exc
        self.execs.append(ex)
        return ex

    def attach(
        self, container_id: str, tty: bool, stdio: Stdio, size: TermSize | None = None
    ) -> Session:
        self._check(container_id)
        container = self.containers.get(container_id)
        if container is None:
            raise errors.FailedPrecondition(f"container {container_id} has no attachable stdio")
        session = container.attach(tty, stdio)
        if size is not None:
            session.resize(*size)
        return session

    def port_forward(self, sandbox_id: str, port: int) -> socket.socket:
        if self.sandboxes and sandbox_id not in self.sandboxes:
            raise errors.NotFound(f"sandbox {sandbox_id} not found")
        sock = socket.create_connection(("127.0.0.1", port), timeout=5.0)
        sock.settimeout(None)
        return sock
