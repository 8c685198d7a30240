"""skiffctl port-forward against the runtime's streaming server through the agent's proxy.

The host-process backend dials 127.0.0.1 in the test's own network
namespace, so the pod's port is a small HTTP server of the test's; the
stack is test_exec.py's. `Forwarding` (listeners + accept loop) runs in a
thread and is stopped through its own `stop()`, never by a signal.
"""

from __future__ import annotations

import pytest

from controlplane.cli.context import CliError
from controlplane.cli.port_forward import PortSpec, parse_ports


def test_parse_ports() -> None:
    assert parse_ports(["8080:80", "443", ":53"]) == [
        PortSpec(8080, 80),
        PortSpec(443, 443),
        PortSpec(0, 53),
    ]
    for bad in ("x", "80:", "1:70000", "-1:80"):
        with pytest.raises(CliError):
            parse_ports([bad])
