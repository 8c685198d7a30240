"""The remote-command protocol: run an exec or attach between a client's streams and a backend.

Transport-independent: the SPDY and WebSocket handlers in server.py collect
the client's streams into `Channels`, and `serve` does the rest. It creates a
pipe per requested stream, starts the backend session with the container's
ends, pumps stdin, stdout, stderr and resize events in threads, waits for the
process, drains output to EOF (bounded by `drain_timeout`), and writes the
outcome on the error channel (a metav1.Status for v4/v5, text for v2/v3).

If the client goes away first, the session is cancelled (the exec'd process is
killed; an attachment is only detached) and every pipe and thread is cleaned
up. `serve` must never return while a pump thread or a pipe fd it created is
still alive, and must never block on the client without a way to be woken.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import select
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from machinery.streaming.remotecommand import (
    SPDY_PROTOCOLS,
    STREAM_ERROR,
    STREAM_RESIZE,
    STREAM_STDERR,
    STREAM_STDIN,
    STREAM_STDOUT,
    V2,
    V3,
    V4,
    V5,
    WEBSOCKET_PROTOCOLS,
    Options,
    SizeStream,
    Source,
    iter_sizes,
)
from runtime.streaming import status
from runtime.streaming.backend import Session, Stdio, TermSize

log = logging.getLogger("skiff.runtime.streaming")

__all__ = [
    "SPDY_PROTOCOLS",
    "STREAM_ERROR",
    "STREAM_RESIZE",
    "STREAM_STDERR",
    "STREAM_STDIN",
    "STREAM_STDOUT",
    "V2",
    "V3",
    "V4",
    "V5",
    "WEBSOCKET_PROTOCOLS",
    "Channels",
    "Options",
    "Sink",
    "SizeStream",
    "Source",
    "iter_sizes",
    "serve",
]

_CHUNK = 32768


class Sink(Protocol):
    def write(self, data: bytes) -> None: ...

    def close(self) -> None: ...


@dataclass
class Channels:
    """The client's side of one remote command, whatever the transport."""

    stdin: Source | None
    stdout: Sink | None
    stderr: Sink | None
    resize: Source | None
    error: Sink | None
    status_json: bool  # v4/v5: metav1.Status; v2/v3: plain text
    abort_inputs: Callable[[], None]
    gone: threading.Event = field(default_factory=threading.Event)
    wake: threading.Event = field(default_factory=threading.Event)

    def mark_gone(self) -> None:
        self.gone.set()
        self.wake.set()


def _close(fd: int | None) -> None:
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass


def _pump_out(fd: int, sink: Sink, stop_fd: int) -> None:
    """Container output -> client, until EOF, a client error or `stop_fd`."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    poller.register(stop_fd, select.POLLIN)
    try:
        while True:
            ready = dict(poller.poll())
            if ready.get(fd):
                data = os.read(fd, _CHUNK)
                if not data:
                    break
                sink.write(data)
            elif ready.get(stop_fd):
                break
    except OSError:
        pass
    finally:
        try:
            sink.close()
        except OSError:
            pass


def _pump_in(source: Source, fd: int, stop_fd: int) -> None:
    """Client stdin -> container, until the client's half-close or a stop.
    Closes `fd` at the end, which is the container's EOF."""
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    poller.register(stop_fd, select.POLLIN)
    try:
        while True:
            data = source.read(_CHUNK)
            if not data:
                break
            view = memoryview(data)
            while view:
                try:
                    view = view[os.write(fd, view) :]
                except BlockingIOError:
                    ready = dict(poller.poll())
                    if ready.get(stop_fd):
                        return
                    if ready.get(fd, 0) & (select.POLLERR | select.POLLHUP):
                        return
    except OSError as exc:
        if exc.errno not in (errno.EPIPE, errno.EBADF):
            log.debug("stdin pump ended: %s", exc)
    finally:
        _close(fd)


def serve(
    start: Callable[[Stdio, TermSize | None], Session],
    ch: Channels,
    *,
    tty: bool,
    drain_timeout: float = 2.0,
    initial_size_timeout: float = 0.5,
    container_id: str = "",
) -> None:
    """Run one exec or attach (`start` calls the backend) against `ch`.

    With a tty, clients send the terminal size right after opening their
    streams; waiting up to `initial_size_timeout` for it lets the process
    start with the right size instead of racing a resize."""
    sizes = SizeStream(ch.resize) if ch.resize is not None else None
    size: TermSize | None = None
    if tty and sizes is not None:
        try:
            size = sizes.next(initial_size_timeout)
        except TimeoutError:
            size = None
    ours: list[int] = []  # server-side pipe ends still open
    theirs: list[int] = []
    stdin_w = stdout_r = stderr_r = None
    child_in = child_out = child_err = None
    threads: list[threading.Thread] = []
    stop_r, stop_w = os.pipe()

    def spawn(target: Callable[..., None], *args: object) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, daemon=True, name="stream-pump")
        thread.start()
        threads.append(thread)
        return thread

    try:
        try:
            if ch.stdin is not None:
                child_in, stdin_w = os.pipe()
                ours.append(stdin_w)
                theirs.append(child_in)
            if ch.stdout is not None:
                stdout_r, child_out = os.pipe()
                ours.append(stdout_r)
                theirs.append(child_out)
            if ch.stderr is not None and not tty:
                stderr_r, child_err = os.pipe()
                ours.append(stderr_r)
                theirs.append(child_err)
            session = start(Stdio(child_in, child_out, child_err), size)
        except Exception as exc:
            log.info("stream start failed", extra={"container_id": container_id, "error": str(exc)})
            for sink in (ch.stdout, ch.stderr):
                if sink is not None:
                    try:
                        sink.close()
                    except OSError:
                        pass
            _write_error(ch, exc=exc)
            return
        finally:
            for fd in theirs:
                _close(fd)

        out_pumps = []
        if stdout_r is not None and ch.stdout is not None:
            out_pumps.append(spawn(_pump_out, stdout_r, ch.stdout, stop_r))
        if stderr_r is not None and ch.stderr is not None:
            out_pumps.append(spawn(_pump_out, stderr_r, ch.stderr, stop_r))
        if stdin_w is not None and ch.stdin is not None:
            ours.remove(stdin_w)  # the pump owns and closes it
            spawn(_pump_in, ch.stdin, stdin_w, stop_r)
        if sizes is not None:
            spawn(_pump_resize, sizes, session)

        result: dict[str, object] = {}

        def waiter() -> None:
            try:
                result["code"] = session.wait()
            except Exception as exc:
                result["exc"] = exc
            finally:
                ch.wake.set()

        wait_thread = spawn(waiter)
        ch.wake.wait()
        if ch.gone.is_set() and wait_thread.is_alive():
            log.info("client went away; cancelling", extra={"container_id": container_id})
            session.cancel()
        wait_thread.join()

        drain_until = time.monotonic() + (0 if ch.gone.is_set() else drain_timeout)
        for pump in out_pumps:
            pump.join(max(0.0, drain_until - time.monotonic()))
        os.write(stop_w, b"x")
        for pump in out_pumps:
            pump.join()

        if not ch.gone.is_set():
            failed = result.get("exc")
            if isinstance(failed, BaseException):
                _write_error(ch, exc=failed)
            else:
                code = result.get("code")
                _write_error(ch, code=code if isinstance(code, int) else None)
    finally:
        try:
            os.write(stop_w, b"x")
        except OSError:
            pass
        ch.abort_inputs()
        for thread in threads:
            thread.join()
        for fd in ours:
            _close(fd)
        _close(stop_r)
        _close(stop_w)


def _pump_resize(sizes: SizeStream, session: Session) -> None:
    try:
        while (size := sizes.next()) is not None:
            session.resize(*size)
    except Exception as exc:
        log.debug("resize pump ended: %s", exc)


def _write_error(
    ch: Channels, *, code: int | None = None, exc: BaseException | None = None
) -> None:
    if ch.error is None:
        return
    if ch.status_json:
        data = status.failure(exc) if exc is not None else status.for_exit(code)
    else:
        data = status.legacy_text(code, exc)
    try:
        if data:
            ch.error.write(data)
        ch.error.close()
    except OSError:
        pass
