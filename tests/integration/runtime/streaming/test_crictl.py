"""crictl (client-go's SPDY executor and port-forwarder) against the streaming server.

A minimal CRI RuntimeService (Version, Exec, Attach, PortForward) on a unix
socket hands out the server's URLs, so the real Go clients exercise the wire
protocol. Skipped where crictl is not installed.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import socket
import struct
import subprocess
import termios
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from proto.runtime.v1 import api_pb2, api_pb2_grpc
from runtime.streaming import StreamingServer
from tests.fakes.streaming_backend import HostProcessBackend
from tests.harness.wait import wait_for

CRICTL = shutil.which("crictl")
pytestmark = pytest.mark.skipif(CRICTL is None, reason="crictl is not installed")


class StreamingOnlyRuntime(api_pb2_grpc.RuntimeServiceServicer):
    def __init__(self, server: StreamingServer) -> None:
        self.server = server

    def Version(
        self, request: api_pb2.VersionRequest, context: grpc.ServicerContext
    ) -> api_pb2.VersionResponse:
        return api_pb2.VersionResponse(
            version="0.1.0",
            runtime_name="skiff-test",
            runtime_version="0",
            runtime_api_version="v1",
        )

    def Exec(
        self, request: api_pb2.ExecRequest, context: grpc.ServicerContext
    ) -> api_pb2.ExecResponse:
        return api_pb2.ExecResponse(url=self.server.get_exec(request))

    def Attach(
        self, request: api_pb2.AttachRequest, context: grpc.ServicerContext
    ) -> api_pb2.AttachResponse:
        return api_pb2.AttachResponse(url=self.server.get_attach(request))

    def PortForward(
        self, request: api_pb2.PortForwardRequest, context: grpc.ServicerContext
    ) -> api_pb2.PortForwardResponse:
        return api_pb2.PortForwardResponse(url=self.server.get_port_forward(request))


@pytest.fixture
def crictl(server: StreamingServer, tmp_path: Path) -> Iterator[list[str]]:
    sock = tmp_path / "cri.sock"
    grpc_server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    api_pb2_grpc.add_RuntimeServiceServicer_to_server(
        StreamingOnlyRuntime(server),  # type: ignore[abstract]  # the rest answers UNIMPLEMENTED
        grpc_server,
    )
    grpc_server.add_insecure_port(f"unix://{sock}")
    grpc_server.start()
    try:
        assert CRICTL is not None
        yield [
            CRICTL,
            "--runtime-endpoint",
            f"unix://{sock}",
            "--image-endpoint",
            f"unix://{sock}",
            "--timeout",
            "10s",
        ]
    finally:
        grpc_server.stop(None).wait()


def run(cmd: list[str], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(cmd, input=stdin, capture_output=True, timeout=30, check=False)


def test_exec_separates_streams_and_reports_exit_code(crictl: list[str]) -> None:
    done = run([*crictl, "exec", "c1", "sh", "-c", "echo -n hello; echo oops >&2; exit 3"])
    assert done.stdout == b"hello"
    assert done.stderr.startswith(b"oops\n")
    assert b"command terminated with exit code 3" in done.stderr
    assert done.returncode == 1
    assert run([*crictl, "exec", "c1", "true"]).returncode == 0


def test_exec_streams_large_stdin_and_stdout(crictl: list[str]) -> None:
    data = os.urandom(2_000_000)
    done = run([*crictl, "exec", "-i", "c1", "sha256sum"], stdin=data)
    assert done.stdout.split()[0].decode() == hashlib.sha256(data).hexdigest()
    done = run([*crictl, "exec", "c1", "head", "-c", "3000000", "/dev/zero"])
    assert done.stdout == b"\0" * 3_000_000


def test_exec_error_reaches_crictl(crictl: list[str]) -> None:
    done = run([*crictl, "exec", "ghost", "true"])
    assert done.returncode == 1
    assert b"container ghost not found" in done.stderr


def test_exec_tty_sees_the_terminal_size(crictl: list[str]) -> None:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 99, 0, 0))
    proc = subprocess.Popen(
        [*crictl, "exec", "-it", "c1", "sh", "-c", "stty size"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    out = b""
    try:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: crictl exited and the pty is closed
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
        proc.wait(timeout=30)
    assert b"33 99" in out
    assert proc.returncode == 0


def test_attach_like_critest(crictl: list[str], backend: HostProcessBackend) -> None:
    backend.add_container("sh1", ["sh"], stdin=True, stdin_once=True)
    done = run([*crictl, "attach", "-i", "sh1"], stdin=b"echo -n hello\n")
    assert done.stdout == b"hello"
    assert done.returncode == 0


def test_port_forward(crictl: list[str]) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def echo_once() -> None:
        conn, _ = listener.accept()
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    echo = threading.Thread(target=echo_once)
    echo.start()
    proc = subprocess.Popen(
        [*crictl, "port-forward", "sb1", f"0:{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdout is not None
    lines: list[bytes] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, b"")))  # type: ignore[union-attr]
    reader.start()
    try:
        line = wait_for(
            lambda: next((x for x in lines if b"Forwarding from 127.0.0.1:" in x), b""),
            message="crictl listening",
        )
        match = re.search(rb"127\.0\.0\.1:(\d+)", line)
        assert match is not None
        with socket.create_connection(("127.0.0.1", int(match.group(1))), timeout=10) as conn:
            conn.sendall(b"through the tunnel")
            got = b""
            while len(got) < len(b"through the tunnel"):
                chunk = conn.recv(100)
                assert chunk
                got += chunk
            assert got == b"through the tunnel"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        reader.join()
        proc.stdout.close()
        echo.join(timeout=10)
        listener.close()
