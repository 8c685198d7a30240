"""skiffctl exec against the runtime's real streaming server, through the agent's proxy.

The stack is all in-process and needs no root: runtime.streaming's server
with its host-process backend (commands run as host processes), the
agent's `StreamProxy` in front of it with a fake `StreamRuntime` that hands
out the server's URLs, a stand-in for the API server's pods/exec
(fake_rest.UpgradeFront) in front of the proxy, and the fake API client
whose Node points at the proxy. The streaming client (controlplane/cli/streamclient.py) is also
checked against the server directly. test_attach.py and
test_port_forward.py use the same stack.
"""

from __future__ import annotations

import io
import os
import pty
import queue
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlsplit

import pytest

from agent.stream_proxy import StreamProxy
from controlplane.cli.context import Context
from controlplane.cli.exec import local_io
from controlplane.cli.main import main
from controlplane.cli.streamclient import CommandIO, UpgradeRefused, run_remote_command, upgrade
from controlplane.client.config import ClientConfig
from machinery.streaming.remotecommand import SPDY_PROTOCOLS, V2, V4
from machinery.streaming.status import outcome
from proto.runtime.v1 import api_pb2 as cri
from runtime.streaming import StreamingConfig, StreamingServer
from tests.fakes.streaming_backend import HostProcessBackend
from tests.unit.controlplane.cli.conftest import Ctl
from tests.unit.controlplane.cli.fake_rest import UpgradeFront
from tests.unit.controlplane.cli.test_logs import node
from tests.unit.runtime.streaming.clients import WsClient

TOKEN = "admin-secret"
CID = "c1"


@dataclass
class ServerRuntime:
    """A StreamRuntime whose pods have one running container (`cid`) and sandbox sb1."""

    server: StreamingServer
    calls: list[Any] = field(default_factory=list)
    cid: str = CID

    def list_containers(self, labels: dict[str, str]) -> list[cri.Container]:
        self.calls.append(labels)
        return [cri.Container(id=self.cid, state=cri.CONTAINER_RUNNING)]

    def list_pod_sandboxes(self, labels: dict[str, str]) -> list[cri.PodSandbox]:
        return [cri.PodSandbox(id="sb1")]

    def exec(self, request: cri.ExecRequest) -> str:
        self.calls.append(request)
        return self.server.get_exec(request)

    def attach(self, request: cri.AttachRequest) -> str:
        self.calls.append(request)
        return self.server.get_attach(request)

    def port_forward(self, request: cri.PortForwardRequest) -> str:
        self.calls.append(request)
        return self.server.get_port_forward(request)


@dataclass
class Stack:
    ctl: Ctl
    backend: HostProcessBackend
    server: StreamingServer
    runtime: ServerRuntime
    proxy: StreamProxy


@pytest.fixture
def stack() -> Iterator[Stack]:
    backend = HostProcessBackend(env={"PATH": "/usr/bin:/bin", "LANG": "C"})
    backend.add_container(CID)
    config = StreamingConfig(port=0, stream_creation_timeout=5.0, drain_timeout=1.0, linger=2.0)
    ctl = Ctl()
    try:
        with StreamingServer(backend, config) as server:
            runtime = ServerRuntime(server)

            def lookup(ns: str, name: str) -> Any:
                try:
                    return ctl.client.get("Pod", name, ns)
                except Exception:
                    return None

            with StreamProxy(lookup, runtime, None) as proxy:
                front = UpgradeFront(proxy.port, TOKEN)
                try:
                    ctl.client.config = ClientConfig(f"127.0.0.1:{front.port}", token=TOKEN)  # type: ignore[attr-defined]
                    node(ctl, "n1", proxy.port)
                    make_pod(ctl, "web")
                    yield Stack(ctl, backend, server, runtime, proxy)
                finally:
                    front.stop()
    finally:
        backend.close()


def make_pod(ctl: Ctl, name: str, phase: str = "Running", **container: Any) -> None:
    ctl.client.create(
        "Pod",
        {
            "metadata": {"name": name},
            "spec": {
                "nodeName": "n1",
                "containers": [{"name": "app", "image": "busybox", **container}],
            },
            "status": {"phase": phase},
        },
        "default",
    )


def path_of(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return f"127.0.0.1:{parts.port}", parts.path


# ---- the client against the runtime's server directly ---------------------------------


def collect(
    stack: Stack,
    cmd: list[str],
    *,
    stdin: bytes | None = None,
    tty: bool = False,
    size: tuple[int, int] | None = None,
    protocols: tuple[str, ...] = SPDY_PROTOCOLS,
) -> tuple[bytes, bytes, int | None, str, str]:
    url = stack.server.get_exec(
        cri.ExecRequest(
            container_id=CID, cmd=cmd, stdin=stdin is not None, stdout=True, stderr=not tty, tty=tty
        )
    )
    conn = upgrade(*path_of(url), "", protocols)
    out, err = bytearray(), bytearray()
    chunks = [stdin] if stdin else []
    sizes: queue.Queue[tuple[int, int] | None] = queue.Queue()
    if size is not None:
        sizes.put(size)
    io_ = CommandIO(
        read_stdin=(lambda: chunks.pop(0) if chunks else b"") if stdin is not None else None,
        write_stdout=out.extend,
        write_stderr=None if tty else err.extend,
        sizes=sizes,
    )
    protocol = conn.protocol
    result = run_remote_command(conn, io_, tty=tty)
    return bytes(out), bytes(err), result.exit_code, result.message, protocol


def test_client_exec_output_and_exit_codes(stack: Stack) -> None:
    out, err, code, _, protocol = collect(stack, ["echo", "hi"])
    assert (out, err, code, protocol) == (b"hi\n", b"", 0, V4)
    out, err, code, _, _ = collect(stack, ["sh", "-c", "echo out; echo err >&2; exit 7"])
    assert (out, err, code) == (b"out\n", b"err\n", 7)
    out, _, code, _, _ = collect(stack, ["cat"], stdin=b"through stdin")
    assert (out, code) == (b"through stdin", 0)


def test_client_exec_v2_and_failures(stack: Stack) -> None:
    out, _, code, _, protocol = collect(stack, ["sh", "-c", "echo x; exit 3"], protocols=(V2,))
    assert (out, code, protocol) == (b"x\n", 3, V2)
    _, _, code, message, _ = collect(stack, ["/no/such/binary"])
    assert code is None and message


def test_client_exec_tty_gets_size(stack: Stack) -> None:
    out, _, code, _, _ = collect(stack, ["stty", "size"], tty=True, size=(100, 30))
    assert code == 0 and out.strip() == b"30 100"


def test_upgrade_refused(stack: Stack) -> None:
    with pytest.raises(UpgradeRefused) as err:
        upgrade(f"127.0.0.1:{stack.server.port}", "/exec/bogus", "", SPDY_PROTOCOLS)
    assert err.value.status == 404


# ---- skiffctl exec through the agent's proxy --------------------------------------------


def test_exec_prints_and_exits_with_the_code(stack: Stack) -> None:
    r = stack.ctl("exec", "web", "--", "echo", "hi")
    assert (r.code, r.out, r.err) == (0, "hi\n", "")
    r = stack.ctl("exec", "web", "--", "sh", "-c", "echo oops >&2; exit 4")
    assert r.code == 4 and r.out == ""
    assert r.err == "oops\ncommand terminated with exit code 4\n"
    [labels, *_] = stack.runtime.calls
    uid = stack.ctl.client.get("Pod", "web", "default")["metadata"]["uid"]
    assert labels == {"io.kubernetes.pod.uid": uid, "io.kubernetes.container.name": "app"}


def test_exec_stdin_and_flags_after_pod(stack: Stack) -> None:
    r = stack.ctl("exec", "-i", "web", "--", "cat", stdin="hello\n")
    assert (r.code, r.out) == (0, "hello\n")
    r = stack.ctl("exec", "web", "-c", "app", "-i", "--", "wc", "-c", stdin="abc")
    assert (r.code, r.out.strip()) == (0, "3")
    request = stack.runtime.calls[-1]
    assert list(request.cmd) == ["wc", "-c"] and request.stdin and request.stderr


def test_exec_tty_without_terminal_is_dropped(stack: Stack) -> None:
    r = stack.ctl("exec", "-it", "web", "--", "sh", "-c", "test -t 1 && echo tty || echo none")
    assert r.code == 0 and r.out == "none\n"
    assert "Unable to use a TTY" in r.err


def test_exec_refusals(stack: Stack) -> None:
    r = stack.ctl("exec", "web")
    assert r.code == 1 and "at least one command" in r.err
    r = stack.ctl("exec", "web", "-c", "nope", "--", "ls")
    assert r.code == 1 and "container nope is not valid" in r.err
    make_pod(stack.ctl, "pending", phase="Pending")
    r = stack.ctl("exec", "pending", "--", "ls")
    assert r.code == 1 and "not running" in r.err
    server = stack.ctl.client.config.server  # type: ignore[attr-defined]
    stack.ctl.client.config = ClientConfig(server=server, token="bad")  # type: ignore[attr-defined]
    r = stack.ctl("exec", "web", "--", "echo", "hi")
    assert r.code == 1 and "Unauthorized" in r.err and r.out == ""


def test_exec_stopped_container(stack: Stack) -> None:
    stack.backend.stopped.add(CID)
    r = stack.ctl("exec", "web", "--", "echo", "hi")
    assert r.code == 1 and "is not running" in r.err


def test_local_io_raw_terminal_and_restore(stack: Stack) -> None:
    """-t on a real terminal: raw mode while the command runs, restored after."""
    import termios

    parent, child = pty.openpty()
    try:
        stdin = os.fdopen(os.dup(child), "r")
        before = termios.tcgetattr(child)
        ctx = Context(args=None, factory=cast(Any, None), stdin=stdin, stdout=io.StringIO())  # type: ignore[arg-type]
        with local_io(ctx, stdin=True, tty=True) as io_:
            raw = termios.tcgetattr(child)
            assert not raw[3] & termios.ECHO and not raw[3] & termios.ICANON
            assert io_.write_stderr is None and io_.sizes.get_nowait() is not None
        assert termios.tcgetattr(child) == before
        stdin.close()
    finally:
        os.close(parent)
        os.close(child)


def test_websocket_clients_pass_through_the_proxy(stack: Stack) -> None:
    """The agent relays bytes, so newer clients' WebSocket (v5) exec works too."""
    with StreamProxy(stack.proxy.pods, stack.runtime, None) as open_proxy:
        url = (
            f"http://127.0.0.1:{open_proxy.port}/exec/default/web/app"
            "?command=sh&command=-c&command=echo%20hi%3B%20exit%202&stdout=1&stderr=1"
        )
        client = WsClient(url)
        assert client.reply.status == 101 and client.protocol == "v5.channel.k8s.io"
        outputs = client.collect()
    assert outputs[1] == b"hi\n"
    assert outcome(outputs[3]).exit_code == 2


def test_exec_tty_on_a_real_terminal(stack: Stack) -> None:
    """-it with a pty as the terminal: the remote side gets a tty of the same size."""
    import fcntl
    import struct
    import termios

    parent, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    stdin = os.fdopen(os.dup(child), "r")
    out, err = io.StringIO(), io.StringIO()
    try:
        code = main(
            ["exec", "-it", "web", "--", "sh", "-c", "test -t 0 && stty size"],
            client_factory=stack.ctl.factory,
            stdout=out,
            stderr=err,
            stdin=stdin,
        )
    finally:
        os.close(parent)  # ends skiffctl's stdin reader (EIO)
        stdin.close()
        os.close(child)
    assert code == 0, err.getvalue()
    assert out.getvalue().strip() == "30 100"
