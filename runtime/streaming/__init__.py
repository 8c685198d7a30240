"""The CRI streaming server: where the URLs of Exec, Attach and PortForward lead.

`StreamingServer` (server.py) hands out single-use URLs for CRI streaming
requests and serves them over HTTP upgrades: SPDY/3.1 and WebSocket, speaking
the Kubernetes remote-command (remotecommand.py) and port-forward
(portforward.py) protocols. The wire formats themselves (framing, header
compression, channel and stream names, Status bodies) live in
machinery/streaming, shared with skiffctl's client. What actually runs a command, attaches
to a container or dials a port is behind the `StreamingBackend` Protocol
(backend.py) that the runtime implements.

This package must never fork, enter namespaces or touch containers itself:
that is the backend's job, done outside the server's threads.
"""

from runtime.streaming.backend import Session, Stdio, StreamingBackend, TermSize
from runtime.streaming.server import StreamingConfig, StreamingServer

__all__ = [
    "Session",
    "Stdio",
    "StreamingBackend",
    "StreamingConfig",
    "StreamingServer",
    "TermSize",
]
