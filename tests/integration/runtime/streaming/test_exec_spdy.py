"""Exec over SPDY/3.1 against a server backed by host processes."""

from __future__ import annotations

import json

import pytest

from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.streaming import StreamingConfig, StreamingServer
from tests.fakes.streaming_backend import HostProcessBackend
from tests.harness.streaming_clients import RemoteCommand, SpdyClient, http_get, spdy_exec
from tests.harness.wait import wait_for


def exec_url(server: StreamingServer, cmd: list[str], **kw: bool) -> str:
    kw.setdefault("stdout", True)
    kw.setdefault("stderr", not kw.get("tty", False))
    return server.get_exec(api_pb2.ExecRequest(container_id="c1", cmd=cmd, **kw))


def test_url_is_absolute_on_loopback(server: StreamingServer) -> None:
    url = exec_url(server, ["true"])
    assert url.startswith(f"http://127.0.0.1:{server.port}/exec/")
    attach = server.get_attach(api_pb2.AttachRequest(container_id="c1", stdout=True))
    assert attach.startswith(f"http://127.0.0.1:{server.port}/attach/")
    pf = server.get_port_forward(api_pb2.PortForwardRequest(pod_sandbox_id="s1", port=[80]))
    assert pf.startswith(f"http://127.0.0.1:{server.port}/portforward/")


def test_invalid_requests_are_refused(server: StreamingServer) -> None:
    with pytest.raises(errors.InvalidArgument):
        server.get_exec(api_pb2.ExecRequest(container_id="", cmd=["true"], stdout=True))
    with pytest.raises(errors.InvalidArgument):
        server.get_exec(api_pb2.ExecRequest(container_id="c1", cmd=["sh"], tty=True, stderr=True))
    with pytest.raises(errors.InvalidArgument):
        server.get_attach(api_pb2.AttachRequest(container_id="c1"))
    with pytest.raises(errors.InvalidArgument):
        server.get_port_forward(api_pb2.PortForwardRequest())


def test_separate_stdout_and_stderr_and_success(server: StreamingServer) -> None:
    result = spdy_exec(exec_url(server, ["sh", "-c", "printf hello; printf oops >&2"]))
    assert result.stdout == b"hello"
    assert result.stderr == b"oops"
    assert result.status == {"metadata": {}, "status": "Success"}


def test_stdout_only_leaves_stderr_out(server: StreamingServer) -> None:
    result = spdy_exec(
        exec_url(server, ["sh", "-c", "echo -n hello; echo err >&2"], stderr=False), stderr=False
    )
    assert result.stdout == b"hello" and result.stderr == b""
    assert result.status["status"] == "Success"


def test_exit_code_is_carried_back(server: StreamingServer) -> None:
    status = spdy_exec(exec_url(server, ["sh", "-c", "exit 42"])).status
    assert status["status"] == "Failure"
    assert status["reason"] == "NonZeroExitCode"
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "42"}]


def test_stdin_is_streamed_and_half_closed(server: StreamingServer) -> None:
    data = b"".join(b"line %d\n" % i for i in range(20000))  # > several flow-control windows
    result = spdy_exec(exec_url(server, ["cat"], stdin=True), stdin=data)
    assert result.stdout == data
    assert result.status["status"] == "Success"


def test_interactive_stdin(server: StreamingServer) -> None:
    rc = RemoteCommand.open(
        exec_url(server, ["sh", "-c", "read a; echo got-$a; read b; echo got-$b"], stdin=True),
        stdin=True,
    )
    assert rc.stdin is not None
    rc.stdin.write(b"one\n")
    wait_for(lambda: b"got-one" in rc.outputs["stdout"], message="first echo")
    rc.stdin.write(b"two\n")
    result = rc.finish()
    assert result.stdout == b"got-one\ngot-two\n"


@pytest.mark.parametrize("like_go", [False, True], ids=["flow-controlled", "like-spdystream"])
def test_large_output_crosses_flow_control_windows(server: StreamingServer, like_go: bool) -> None:
    """A client that sends WINDOW_UPDATEs gets flow control; one that never
    does (spdystream) must not be stalled at the initial 64 KiB window."""
    url = exec_url(server, ["sh", "-c", "head -c 1000000 /dev/zero"])
    result = spdy_exec(url, like_go=like_go)
    assert result.stdout == b"\0" * 1000000


def test_tty_resize_and_merged_output(server: StreamingServer) -> None:
    # The resize stream and stdin are separate SPDY streams with no order
    # between them (as in Kubernetes): the last size may land after "go", so
    # the command waits for it, up to 10 s, and then prints what it has.
    script = (
        "read x; i=0; while [ \"$(stty size)\" != '40 120' ] && [ $i -lt 100 ];"
        " do sleep 0.1; i=$((i+1)); done; stty size; echo to-stderr >&2"
    )
    url = exec_url(server, ["sh", "-c", script], stdin=True, tty=True)
    rc = RemoteCommand.open(url, stdin=True, stderr=False, tty=True)
    assert rc.stderr is None and rc.stdin is not None
    rc.send_resize(101, 37)
    rc.send_resize(120, 40)
    wait_for(lambda: rc.client.session is not None, message="session")
    rc.stdin.write(b"go\n")
    result = rc.finish()
    lines = result.stdout.replace(b"\r", b"").split(b"\n")
    assert b"40 120" in lines
    assert b"to-stderr" in lines
    assert result.status["status"] == "Success"


def test_tty_stdin_close_is_eof(server: StreamingServer) -> None:
    url = exec_url(server, ["cat"], stdin=True, tty=True)
    result = spdy_exec(url, stdin=b"abc\n", stderr=False, tty=True)
    assert b"abc" in result.stdout
    assert result.status["status"] == "Success"


def test_unknown_container_is_reported_on_the_error_stream(server: StreamingServer) -> None:
    url = server.get_exec(api_pb2.ExecRequest(container_id="nope", cmd=["true"], stdout=True))
    result = spdy_exec(url, stderr=False)
    assert result.status["status"] == "Failure"
    assert result.status["reason"] == "NotFound"
    assert "nope" in result.status["message"]


def test_stopped_container_is_reported(
    server: StreamingServer, backend: HostProcessBackend
) -> None:
    backend.stopped.add("c1")
    status = spdy_exec(exec_url(server, ["true"])).status
    assert status["status"] == "Failure" and "not running" in status["message"]


def test_missing_executable_is_reported(server: StreamingServer) -> None:
    status = spdy_exec(exec_url(server, ["/no/such/binary"])).status
    assert status["status"] == "Failure" and "/no/such/binary" in status["message"]


def test_v3_and_v2_write_text_errors(server: StreamingServer) -> None:
    ok = spdy_exec(exec_url(server, ["true"]), protocol="v3.channel.k8s.io")
    assert ok.error == b""
    bad = spdy_exec(exec_url(server, ["sh", "-c", "echo x; exit 3"]), protocol="v2.channel.k8s.io")
    assert bad.stdout == b"x\n"
    assert bad.error == b"command terminated with non-zero exit code: exit status 3"


def test_unknown_used_and_wrong_kind_tokens_are_404(server: StreamingServer) -> None:
    assert http_get(f"{server.base_url}/exec/not-a-token").status == 404
    assert http_get(f"{server.base_url}/nothing/here").status == 404
    url = exec_url(server, ["true"])
    assert spdy_exec(url).status["status"] == "Success"
    assert SpdyClient(url, ("v4.channel.k8s.io",)).reply.status == 404  # used
    token = exec_url(server, ["true"]).rsplit("/", 1)[1]
    assert http_get(f"{server.base_url}/attach/{token}").status == 404  # wrong kind, now consumed


def test_expired_token_is_404(backend: HostProcessBackend) -> None:
    now = [0.0]
    with StreamingServer(backend, clock=lambda: now[0]) as server:
        url = exec_url(server, ["true"])
        now[0] += 61
        assert http_get(url).status == 404


def test_no_upgrade_or_no_common_protocol(server: StreamingServer) -> None:
    assert http_get(exec_url(server, ["true"])).status == 400
    reply = SpdyClient(exec_url(server, ["true"]), ("v1.channel.k8s.io",)).reply
    assert reply.status == 403
    assert reply.headers["x-accepted-stream-protocol-versions"].endswith(".channel.k8s.io")


def test_status_json_is_compact_metav1(server: StreamingServer) -> None:
    result = spdy_exec(exec_url(server, ["sh", "-c", "exit 1"]))
    assert json.loads(result.error)["details"]["causes"][0]["message"] == "1"


def test_tty_starts_with_the_clients_first_size(server: StreamingServer) -> None:
    url = exec_url(server, ["stty", "size"], tty=True)
    rc = RemoteCommand.open(url, stderr=False, tty=True)
    rc.send_resize(132, 43)
    result = rc.finish()
    assert result.stdout.strip() == b"43 132"


def test_tty_without_a_size_still_starts(backend: HostProcessBackend) -> None:
    config = StreamingConfig(initial_size_timeout=0.05)
    with StreamingServer(backend, config) as server:
        result = spdy_exec(exec_url(server, ["echo", "up"], tty=True), stderr=False, tty=True)
        assert result.stdout == b"up\r\n"


def test_background_child_holding_stdout_does_not_hang_the_exec(server: StreamingServer) -> None:
    """The exec'd shell exits while a child keeps stdout open: after the drain
    timeout the status is reported anyway (the child is the container's business)."""
    result = spdy_exec(exec_url(server, ["sh", "-c", "sleep 300 & echo bye"]))
    assert result.stdout == b"bye\n"
    assert result.status["status"] == "Success"
