"""skiffctl port-forward: forward local ports to a pod, through the API server.

`port-forward [--address 127.0.0.1] POD|pod/POD|TYPE/NAME [LOCAL:]REMOTE...`
(`:REMOTE` picks a free local port). One SPDY/3.1 connection
(`portforward.k8s.io`) to the API server's pods/portforward (relayed to the agent)
carries every forwarded connection as its own (error, data) stream pair,
as kubectl does. It listens only on the given address (127.0.0.1 by
default), prints `Forwarding from ADDR:LOCAL -> REMOTE` for each port and
`Handling connection for LOCAL` for each connection, and runs until
interrupted (exit 0) or until the connection to the pod is lost (exit 1).
A failure to reach the pod's port ends that one connection and is printed.
This module never imports the agent or the runtime.

Ctrl-C (SIGINT, or SIGTERM) stops it as kubectl's stop channel does: the
handler only wakes the accept loop, through a pipe that is also the
interpreter's signal wakeup fd (so a signal delivered to any thread wakes
it), and the teardown waits at most CLOSE_GRACE for the connections'
threads; a second Ctrl-C during the teardown ends it at once. Nothing
waits on a KeyboardInterrupt raised at an arbitrary point of a thread.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

from controlplane.cli.context import CliError, Context
from controlplane.cli.exec import dial, resolve
from controlplane.cli.streamclient import (
    PortForwarder,
    Upgraded,
    port_forward_path,
)
from machinery.streaming.portforward import PROTOCOL

CLOSE_GRACE = 2.0  # seconds the teardown waits for the forwarded connections
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="POD | TYPE/NAME")
    parser.add_argument("ports", nargs="+", metavar="[LOCAL:]REMOTE")
    parser.add_argument(
        "--address", default="127.0.0.1", help="local address to listen on (default 127.0.0.1)"
    )


@dataclass(frozen=True)
class PortSpec:
    local: int  # 0: any free port
    remote: int


def parse_ports(words: list[str]) -> list[PortSpec]:
    specs = []
    for word in words:
        local, sep, remote = word.partition(":")
        if not sep:
            remote = local
        try:
            lport = int(local) if local else 0
            rport = int(remote)
        except ValueError:
            raise CliError(f"invalid port specification {word!r}: use [LOCAL:]REMOTE") from None
        if not 0 <= lport < 65536 or not 0 < rport < 65536:
            raise CliError(f"invalid port specification {word!r}: ports are 1-65535")
        specs.append(PortSpec(lport, rport))
    return specs


class Forwarding:
    """Listeners for the specs and the accept loop, over one port-forward session."""

    def __init__(
        self,
        conn: Upgraded,
        specs: list[PortSpec],
        address: str,
        say: Callable[[str], None],
        complain: Callable[[str], None],
    ) -> None:
        self._say = say
        self._complain = complain
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)  # a signal wakeup fd must not block
        self.forwarder = PortForwarder(conn, self._on_error)
        self.listeners: list[tuple[socket.socket, PortSpec]] = []
        self.stopped = threading.Event()
        try:
            for spec in specs:
                family = socket.AF_INET6 if ":" in address else socket.AF_INET
                sock = socket.socket(family, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                self.listeners.append((sock, spec))
                sock.bind((address, spec.local))
                sock.listen(64)
        except OSError as err:
            self._close_listeners()
            os.close(self._wake_r)
            os.close(self._wake_w)
            raise CliError(f"unable to listen on {address}: {err}") from None
        conn.session.on_close(self.stop)
        for sock, spec in self.listeners:
            say(f"Forwarding from {address}:{sock.getsockname()[1]} -> {spec.remote}")

    @property
    def local_ports(self) -> list[int]:
        return [int(sock.getsockname()[1]) for sock, _ in self.listeners]

    def _on_error(self, port: int, message: str) -> None:
        self._complain(f"error: an error occurred forwarding to {port}: {message.strip()}")

    def stop(self) -> None:
        """Make `serve` return (from any thread, or the session's close)."""
        if not self.stopped.is_set():
            self.stopped.set()
            try:
                os.write(self._wake_w, b"x")
            except OSError:
                pass

    @contextmanager
    def stopped_by_signals(self) -> Iterator[None]:
        """While inside: SIGINT and SIGTERM stop `serve` (from the main thread
        only, where Python runs signal handlers; elsewhere nothing changes)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def on_signal(signum: int, frame: FrameType | None) -> None:
            if self.stopped.is_set():
                raise KeyboardInterrupt  # a second Ctrl-C: stop waiting
            self.stop()

        previous = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}
        wakeup = signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)
        try:
            yield
        finally:
            signal.set_wakeup_fd(wakeup)
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _drain_wake(self) -> None:
        try:
            while os.read(self._wake_r, 512):
                pass
        except BlockingIOError:
            pass

    def serve(self) -> bool:
        """Accept until stopped; True if the connection to the pod was lost."""
        by_fd = {sock.fileno(): (sock, spec) for sock, spec in self.listeners}
        try:
            while not self.stopped.is_set():
                ready, _, _ = select.select([self._wake_r, *by_fd], [], [])
                for fd in ready:
                    if fd == self._wake_r:
                        self._drain_wake()
                        continue
                    sock, spec = by_fd[fd]
                    try:
                        conn, _ = sock.accept()
                    except OSError:
                        continue
                    self._say(f"Handling connection for {sock.getsockname()[1]}")
                    self.forwarder.handle(conn, spec.remote)
            return self.forwarder.conn.session.closed.is_set()
        finally:
            self._close_listeners()
            self.forwarder.close(CLOSE_GRACE)
            self._unset_wakeup_fd()  # before its fd number can be reused
            os.close(self._wake_r)
            os.close(self._wake_w)

    def _unset_wakeup_fd(self) -> None:
        if threading.current_thread() is threading.main_thread():
            current = signal.set_wakeup_fd(-1)
            if current != self._wake_w:
                signal.set_wakeup_fd(current)

    def _close_listeners(self) -> None:
        for sock, _ in self.listeners:
            sock.close()


def run(ctx: Context) -> int:
    args = ctx.args
    specs = parse_ports(args.ports)
    target = args.target if "/" in args.target else f"pod/{args.target}"
    where = resolve(ctx, target, "", need_container=False)
    path = port_forward_path(where.namespace, where.name, [s.remote for s in specs])
    conn = dial(where, path, (PROTOCOL,))
    forwarding = Forwarding(conn, specs, args.address, ctx.out, ctx.err)
    try:
        with forwarding.stopped_by_signals():
            lost = forwarding.serve()
    except KeyboardInterrupt:
        return 0
    if lost:
        ctx.err("error: lost connection to pod")
        return 1
    return 0
