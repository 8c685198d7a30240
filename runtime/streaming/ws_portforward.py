"""The port-forward protocol over WebSocket, server side, as kubelet serves it.

Clients that do not speak SPDY (the Python client, kr8s, lightkube, ...)
open a WebSocket to pods/portforward with the ports in the query (`ports`
at the API server, `port` at the agent, the CRI request's `port` here).
Subprotocols: `v4.channel.k8s.io` or none at all (kubelet's "" protocol),
both binary; `v4.base64.channel.k8s.io` is not served. Every port i has two
channels, 2i for data (both ways) and 2i+1 for errors (to the client); the
first message on each is the port, two bytes little-endian. For each port
the backend dials it inside the sandbox and bytes are copied both ways until
the pod's side ends (a failure to dial goes to the error channel as text,
as kubelet writes it); once every port is done, or the client closes, the
WebSocket closes and every socket is shut down. One WebSocket carries one
connection per port: clients open a WebSocket per connection. This module
must never dial anything itself.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Sequence

from machinery.streaming import websocket
from runtime.streaming.forwards import Dialer, Forwards

V4 = "v4.channel.k8s.io"
NO_PROTOCOL = ""  # kubelet's binary protocol for clients that name none


def choose_protocol(offered: Sequence[str]) -> str | None:
    """The subprotocol to answer with ("" when the client named none), or None
    when it offered only ones not served here."""
    if not offered:
        return NO_PROTOCOL
    return V4 if V4 in offered else None


def port_message(port: int) -> bytes:
    return struct.pack("<H", port)


def serve(
    conn: websocket.ChannelConnection, ports: Sequence[int], dial: Dialer, sandbox_id: str = ""
) -> None:
    """Forward every port over its channels; return when all are done or the
    client has gone (the caller closes the WebSocket)."""
    forwards = Forwards()

    def forward(i: int, port: int) -> None:
        data, error = 2 * i, 2 * i + 1
        sock = forwards.connect(dial, port, sandbox_id, lambda message: conn.write(error, message))
        if sock is not None:
            inbound = conn.inputs[data]
            forwards.copy(sock, inbound, websocket.ChannelSink(conn, data), inbound.abort)

    conn.on_gone(forwards.shut_all)
    threads = [
        threading.Thread(target=forward, args=(i, port), daemon=True, name="ws-port-forward")
        for i, port in enumerate(ports)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
