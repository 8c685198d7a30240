"""Exec and PortForward through the runtime's streaming URLs with a SPDY
client (the streaming package's test client): stdout/stderr separate and
exact, a tty exec, stdin, exit codes, and a port in the pod's netns."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from proto.runtime.v1 import api_pb2
from tests.harness.streaming_clients import (
    PortForwardClient,
    RemoteCommand,
    read_to_eof,
    spdy_exec,
)
from tests.harness.wait import wait_for
from tests.linux.runtime.harness import Runtime, container_config
from tests.linux.runtime.test_containers import started
from tests.linux.runtime.test_lifecycle import exec_sync, run_pod, status

pytestmark = pytest.mark.root


def exec_url(r: Runtime, cid: str, cmd: list[str], **kw: bool) -> str:
    url: str = r.rt.Exec(api_pb2.ExecRequest(container_id=cid, cmd=cmd, stdout=True, **kw)).url
    return url


def test_exec_and_port_forward(runtime: Runtime, tmp_path: Path) -> None:
    r = runtime
    sid, pcfg = run_pod(r, tmp_path, "stream")
    www = tmp_path / "www"
    www.mkdir()
    (www / "index.html").write_text("forwarded\n")
    mount = api_pb2.Mount(container_path="/www", host_path=str(www), readonly=True)
    cid = started(
        r,
        sid,
        pcfg,
        container_config("web", ["httpd", "-f", "-p", "8080", "-h", "/www"], mounts=[mount]),
    )

    url = exec_url(r, cid, ["sh", "-c", "echo -n out; echo -n err >&2; exit 3"], stderr=True)
    assert url.startswith("http://127.0.0.1:")
    res = spdy_exec(url)
    assert res.stdout == b"out" and res.stderr == b"err"
    assert res.status.get("status") == "Failure" and "3" in res.error.decode()

    res = spdy_exec(exec_url(r, cid, ["cat"], stdin=True, stderr=True), stdin=b"piped")
    assert res.stdout == b"piped" and res.status.get("status", "Success") == "Success"

    rc = RemoteCommand.open(
        exec_url(r, cid, ["sh", "-c", "tty; stty size"], tty=True, stdin=True), stdin=True, tty=True
    )
    rc.send_resize(100, 40)
    assert rc.stdin is not None
    rc.stdin.close()
    out = rc.finish().stdout
    assert b"/dev/pts/" in out

    pf = r.rt.PortForward(api_pb2.PortForwardRequest(pod_sandbox_id=sid, port=[8080])).url
    client = PortForwardClient(pf)
    try:
        for _ in range(2):
            _, data = client.connect(8080)
            data.write(b"GET /index.html HTTP/1.0\r\nHost: x\r\n\r\n")
            body = read_to_eof(data)
            assert body.startswith(b"HTTP/1.") and body.endswith(b"forwarded\n")
    finally:
        client.close()
    # exec'd processes are gone afterwards
    assert b"tty; stty" not in exec_sync(r, cid, ["ps", "-o", "args"]).stdout


def test_attach(runtime: Runtime, tmp_path: Path) -> None:
    r = runtime
    sid, pcfg = run_pod(r, tmp_path, "attach")
    cfg = container_config("sh", ["/bin/sh"], stdin=True, stdin_once=True, log_path="sh.log")
    cid = started(r, sid, pcfg, cfg)
    url = r.rt.Attach(
        api_pb2.AttachRequest(container_id=cid, stdin=True, stdout=True, stderr=True)
    ).url
    rc = RemoteCommand.open(url, stdin=True)
    assert rc.stdin is not None
    rc.stdin.write(b"echo -n hello\n")
    rc.stdin.close()  # stdin_once: the shell sees EOF and exits
    res = rc.finish()
    assert res.stdout == b"hello"
    wait_for(lambda: status(r, cid).state == api_pb2.CONTAINER_EXITED, message="sh exited")
    with pytest.raises(grpc.RpcError) as exc:
        r.rt.Attach(api_pb2.AttachRequest(container_id=cid, stdout=True))
    assert exc.value.code() == grpc.StatusCode.FAILED_PRECONDITION
