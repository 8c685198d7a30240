"""A socket server serving on a daemon thread of its own: the components'
/metrics server and their secure port."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from socketserver import TCPServer


class ServerThread:
    """`server` served from construction on a thread named `name`; `port`,
    and stop() closes it."""

    def __init__(self, server: TCPServer, name: str, poll_interval: float = 0.5) -> None:
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": poll_interval},
            name=name, daemon=True,
        )  # fmt: skip
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def stop(self) -> None:
        """Closed; waits up to 5 s for the serving thread (unless called on it)."""
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
