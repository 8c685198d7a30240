"""The pod side of a port-forward session, whatever its wire (SPDY or
WebSocket): dialing a port in the sandbox, copying bytes both ways, and
shutting every socket down together when the client goes."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable

from machinery.streaming.pump import Readable, Writable, socket_to_stream, stream_to_socket

log = logging.getLogger("skiff.runtime.streaming")

Dialer = Callable[[int], socket.socket]


class Forwards:
    """The sockets of one session's live forwards."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sockets: set[socket.socket] = set()
        self.closed = False

    def shut_all(self) -> None:
        """The client has gone: end every forward; no new one starts."""
        with self.lock:
            self.closed = True
            live = list(self.sockets)
        for sock in live:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def connect(
        self, dial: Dialer, port: int, sandbox_id: str, failed: Callable[[bytes], None]
    ) -> socket.socket | None:
        """The port dialed in the sandbox, or None: a failure to dial is
        handed to `failed` as kubelet words it; after shut_all, none."""
        try:
            sock = dial(port)
        except Exception as exc:
            message = f"error forwarding port {port} to pod {sandbox_id}, uid : {exc}"
            log.info("port-forward dial failed", extra={"pod": sandbox_id, "error": str(exc)})
            try:
                failed(message.encode())
            except OSError:
                pass
            return None
        # A socket received over SCM_RIGHTS keeps the sender's O_NONBLOCK (file
        # status flags are shared); the copy loops below need a blocking one.
        sock.setblocking(True)
        with self.lock:
            if self.closed:
                sock.close()
                return None
            self.sockets.add(sock)
        return sock

    def copy(
        self,
        sock: socket.socket,
        inbound: Readable,
        outbound: Writable,
        abort_inbound: Callable[[], None],
        finished: Callable[[], None] = lambda: None,
    ) -> None:
        """Copy both ways until the pod's side ends (the client's end of
        input half-closes the socket); then `finished`, and the socket is
        shut down, its inbound copy stopped and the socket closed."""

        def client_to_pod() -> None:
            try:
                stream_to_socket(inbound, sock)
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass

        upstream = threading.Thread(target=client_to_pod, daemon=True, name="port-forward-in")
        upstream.start()
        try:
            socket_to_stream(sock, outbound)
        finally:
            finished()
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            abort_inbound()
            upstream.join()
            with self.lock:
                self.sockets.discard(sock)
            sock.close()
