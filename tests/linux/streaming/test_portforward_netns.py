"""Port-forward into a network namespace, the way the runtime must do it.

The backend here dials from a short-lived child process that runs inside the
namespace (`ip netns exec`) and hands the connected socket back over a unix
socketpair (SCM_RIGHTS): the streaming server's threads never enter a
namespace. In the runtime the sandbox's monitor plays the child's part.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.streaming import StreamingConfig, StreamingServer
from tests.fakes.streaming_backend import HostProcessBackend
from tests.harness.streaming_clients import PortForwardClient, read_to_eof

pytestmark = [pytest.mark.root, pytest.mark.netns]

DIAL = """
import socket, sys
port, out = int(sys.argv[1]), socket.socket(fileno=int(sys.argv[2]))
try:
    conn = socket.create_connection(("127.0.0.1", port), timeout=5)
except OSError as exc:
    out.sendall(str(exc).encode())
else:
    socket.send_fds(out, [b"ok"], [conn.fileno()])
"""

ECHO = """
import socket, sys
server = socket.create_server(("127.0.0.1", 8080))
print("ready", flush=True)
while True:
    conn, _ = server.accept()
    with conn:
        while data := conn.recv(65536):
            conn.sendall(data)
"""


@dataclass
class NetnsBackend(HostProcessBackend):
    """Sandbox id -> named network namespace."""

    netns: dict[str, str] | None = None

    def port_forward(self, sandbox_id: str, port: int) -> socket.socket:
        name = (self.netns or {}).get(sandbox_id)
        if name is None:
            raise errors.NotFound(f"sandbox {sandbox_id} not found")
        ours, theirs = socket.socketpair()
        with ours:
            with theirs:
                argv = [sys.executable, "-c", DIAL, str(port), str(theirs.fileno())]
                child = subprocess.Popen(
                    ["ip", "netns", "exec", name, *argv],
                    pass_fds=(theirs.fileno(),),
                    stdin=subprocess.DEVNULL,
                )
            ours.settimeout(10)
            try:
                msg, fds, _flags, _addr = socket.recv_fds(ours, 1024, 1)
            finally:
                child.wait()
        if not fds:
            raise errors.Unavailable(f"dial {port} in {name}: {msg.decode(errors='replace')}")
        return socket.socket(fileno=fds[0])


@pytest.fixture
def echo_in_netns(netns: str) -> Iterator[str]:
    proc = subprocess.Popen(
        ["ip", "netns", "exec", netns, sys.executable, "-c", ECHO], stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"ready\n"
        yield netns
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_port_forward_reaches_a_server_only_inside_the_netns(echo_in_netns: str) -> None:
    backend = NetnsBackend(netns={"sb1": echo_in_netns})
    with StreamingServer(backend, StreamingConfig()) as server:
        client = PortForwardClient(
            server.get_port_forward(api_pb2.PortForwardRequest(pod_sandbox_id="sb1", port=[8080]))
        )
        error, data = client.connect(8080)
        data.write(b"hello from the host")
        data.close()
        assert read_to_eof(error) == b""
        assert read_to_eof(data) == b"hello from the host"
        # the same port in a sandbox we do not know is an error, not the host's port
        client.close()
        other = PortForwardClient(
            server.get_port_forward(api_pb2.PortForwardRequest(pod_sandbox_id="other"))
        )
        error, data = other.connect(8080)
        assert b"sandbox other not found" in read_to_eof(error)
        assert read_to_eof(data) == b""
        other.close()
