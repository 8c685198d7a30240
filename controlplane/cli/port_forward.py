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
"""

from __future__ import annotations

import argparse
import os
import select
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass

from controlplane.cli.context import CliError, Context
from controlplane.cli.exec import dial, resolve
from controlplane.cli.streamclient import (
    PortForwarder,
    Upgraded,
    port_forward_path,
)
from machinery.streaming.portforward import PROTOCOL


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

    def serve(self) -> bool:
        """Accept until stopped; True if the connection to the pod was lost."""
        by_fd = {sock.fileno(): (sock, spec) for sock, spec in self.listeners}
        try:
            while not self.stopped.is_set():
                ready, _, _ = select.select([self._wake_r, *by_fd], [], [])
                for fd in ready:
                    if fd == self._wake_r:
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
            self.forwarder.close()
            os.close(self._wake_r)
            os.close(self._wake_w)

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
        lost = forwarding.serve()
    except KeyboardInterrupt:
        return 0
    if lost:
        ctx.err("error: lost connection to pod")
        return 1
    return 0
