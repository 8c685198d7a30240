"""One port for both APIs: the REST API and, behind it, skiff's gRPC API.

Every connection to the API port is either kubectl-like (HTTP/1.1) or a
gRPC client (HTTP/2). With TLS, ALPN tells them apart: the server prefers
http/1.1, so a client that offers it (kubectl, client libraries) gets the
REST API, and one that offers only h2 (gRPC) gets h2. Without TLS (tests),
the HTTP/2 connection preface does. gRPC connections are relayed, bytes
untouched after TLS, to the gRPC server on a private unix socket; the rest
are handed to aiohttp. A relayed connection whose client showed a
certificate TLS verified is connected from a name the gRPC side can look
that certificate up by (relayedpeers.py). This module never parses a request.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Callable
from typing import Any

from controlplane.apiserver.relayedpeers import RelayedPeers

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
ALPN = ["http/1.1", "h2"]


class _Pipe(asyncio.Protocol):
    """One direction of a relay: what arrives here is written to `peer`."""

    def __init__(self, on_lost: Callable[[], None] | None = None) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: asyncio.Transport | None = None
        self._held: list[bytes] = []
        self._on_lost = on_lost

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def attach(self, peer: asyncio.Transport) -> None:
        self.peer = peer
        for data in self._held:
            peer.write(data)
        self._held.clear()

    def data_received(self, data: bytes) -> None:
        if self.peer is None:
            self._held.append(data)
        else:
            self.peer.write(data)

    def eof_received(self) -> bool | None:
        return None  # the transport closes; connection_lost closes the peer

    def connection_lost(self, exc: Exception | None) -> None:
        if self._on_lost is not None:
            self._on_lost()
        if self.peer is not None:
            self.peer.close()

    # Flow control: when our transport's buffer is full, stop reading the peer.
    def pause_writing(self) -> None:
        if self.peer is not None:
            self.peer.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None:
            self.peer.resume_reading()


class FrontDoor(asyncio.Protocol):
    """Decides a connection's API, then gets out of the way."""

    def __init__(
        self,
        http: Callable[[], asyncio.Protocol],
        grpc_socket: str,
        peers: RelayedPeers | None = None,
    ) -> None:
        self._http = http
        self._grpc_socket = grpc_socket
        self._peers = peers
        self._transport: asyncio.Transport | None = None
        self._head = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            # Small messages (watch events) go out at once, relayed ones too.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None:
            if ssl_object.selected_alpn_protocol() == "h2":
                self._to_grpc(b"")
            else:
                self._to_http(b"")

    def data_received(self, data: bytes) -> None:
        # Only without TLS: wait for enough bytes to tell the preface.
        self._head += data
        if self._head.startswith(PREFACE):
            self._to_grpc(self._head)
        elif not PREFACE.startswith(self._head[: len(PREFACE)]):
            self._to_http(self._head)

    def _to_http(self, head: bytes) -> None:
        assert self._transport is not None
        protocol = self._http()
        self._transport.set_protocol(protocol)
        protocol.connection_made(self._transport)
        if head:
            protocol.data_received(head)

    def _to_grpc(self, head: bytes) -> None:
        client = self._transport
        assert client is not None
        inbound = _Pipe()
        client.set_protocol(inbound)
        inbound.connection_made(client)
        if head:
            inbound.data_received(head)
        asyncio.get_running_loop().create_task(self._connect(client, inbound))

    async def _connect(self, client: asyncio.Transport, inbound: _Pipe) -> None:
        loop = asyncio.get_running_loop()
        cert = client.get_extra_info("peercert") if self._peers is not None else None
        bound = None
        if isinstance(cert, dict) and cert and self._peers is not None:
            bound = self._peers.bound_socket()
        try:
            if bound is None or not isinstance(cert, dict):
                backend, outbound = await loop.create_unix_connection(_Pipe, self._grpc_socket)
            else:
                backend, outbound = await self._connect_as(bound, cert)
        except OSError:
            client.close()
            return
        outbound.attach(client)
        inbound.attach(backend)
        if client.is_closing():
            backend.close()

    async def _connect_as(
        self, bound: tuple[socket.socket, str], cert: dict[str, Any]
    ) -> tuple[asyncio.Transport, _Pipe]:
        """Connect from the bound name and record the client's certificate
        under it before a byte is relayed; forgotten when the relay ends."""
        peers = self._peers
        assert peers is not None
        sock, name = bound
        loop = asyncio.get_running_loop()
        try:
            sock.setblocking(False)
            await loop.sock_connect(sock, self._grpc_socket)
            peers.register(name, cert)
            return await loop.create_unix_connection(
                lambda: _Pipe(on_lost=lambda: peers.forget(name)), sock=sock
            )
        except BaseException:
            peers.forget(name)
            with contextlib.suppress(OSError):
                os.unlink(name)
            sock.close()
            raise
