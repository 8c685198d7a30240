"""Free TCP ports on 127.0.0.1 for daemons that tests and benchmarks start."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on right now (the caller binds it soon after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
