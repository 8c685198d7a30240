"""Attach over SPDY to containers that are host processes of the test backend."""

from __future__ import annotations

import fcntl
import struct
import termios

from proto.runtime.v1 import api_pb2
from runtime.streaming import StreamingServer
from tests.fakes.streaming_backend import HostProcessBackend
from tests.harness.streaming_clients import RemoteCommand, spdy_exec
from tests.harness.wait import wait_for


def attach_url(server: StreamingServer, cid: str, **kw: bool) -> str:
    return server.get_attach(api_pb2.AttachRequest(container_id=cid, **kw))


def test_attach_like_critest(server: StreamingServer, backend: HostProcessBackend) -> None:
    """critest writes `echo -n hello` to an attached /bin/sh and expects exactly `hello`."""
    backend.add_container("sh1", ["sh"], stdin=True, stdin_once=True)
    url = attach_url(server, "sh1", stdin=True, stdout=True, stderr=True)
    result = spdy_exec(url, stdin=b"echo -n hello\n")
    assert result.stdout == b"hello"
    assert result.stderr == b""
    assert result.status == {"metadata": {}, "status": "Success"}
    wait_for(backend.containers["sh1"].exited.is_set, message="container exit after stdin EOF")


def test_detach_leaves_the_container_running(
    server: StreamingServer, backend: HostProcessBackend
) -> None:
    backend.add_container(
        "loop", ["sh", "-c", "while read l; do echo seen-$l; done"], stdin_once=False
    )
    url = attach_url(server, "loop", stdin=True, stdout=True)
    rc = RemoteCommand.open(url, stdin=True, stderr=False)
    assert rc.stdin is not None
    rc.stdin.write(b"a\n")
    wait_for(lambda: b"seen-a" in rc.outputs["stdout"], message="first attach output")
    rc.client.abort()
    container = backend.containers["loop"]
    assert not container.exited.is_set()
    # a second attachment still reaches the same process
    rc2 = RemoteCommand.open(
        attach_url(server, "loop", stdin=True, stdout=True), stdin=True, stderr=False
    )
    assert rc2.stdin is not None
    rc2.stdin.write(b"b\n")
    wait_for(lambda: b"seen-b" in rc2.outputs["stdout"], message="second attach output")
    rc2.client.close()
    assert container.proc.poll() is None


def test_attach_tty_with_resize(server: StreamingServer, backend: HostProcessBackend) -> None:
    backend.add_container("tty1", ["sh", "-c", "read x; stty size; read y"], tty=True)
    url = attach_url(server, "tty1", stdin=True, stdout=True, tty=True)
    rc = RemoteCommand.open(url, stdin=True, stderr=False, tty=True)
    assert rc.stdin is not None
    rc.send_resize(90, 21)
    # the resize is asynchronous to stdin: wait until the pty has it
    container = backend.containers["tty1"]

    def size() -> tuple[int, int]:
        assert container.input is not None
        rows, cols, _, _ = struct.unpack(
            "HHHH", fcntl.ioctl(container.input, termios.TIOCGWINSZ, b"\0" * 8)
        )
        return rows, cols

    wait_for(lambda: size() == (21, 90), message="window size applied")
    rc.stdin.write(b"go\n")
    wait_for(lambda: b"21 90" in rc.outputs["stdout"], message="stty output")
    rc.stdin.write(b"done\n")
    result = rc.finish()
    assert result.status["status"] == "Success"


def test_attach_to_unknown_or_exited_container(
    server: StreamingServer, backend: HostProcessBackend
) -> None:
    status = spdy_exec(attach_url(server, "ghost", stdout=True), stderr=False).status
    assert status["reason"] == "NotFound"
    backend.add_container("quick", ["true"], stdin=False)
    wait_for(backend.containers["quick"].exited.is_set, message="container exit")
    status = spdy_exec(attach_url(server, "quick", stdout=True), stderr=False).status
    assert status["status"] == "Failure" and "not running" in status["message"]
