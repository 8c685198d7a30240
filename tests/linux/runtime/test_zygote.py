"""The monitor zygote runs only while it is used (issue 27, memory at rest):
none while the runtime is at rest, started by the first request, gone after
`idle` seconds without one, started again by the next, and no request lost
to a zygote that exits as it comes."""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from proto.runtime.v1 import api_pb2
from runtime.process import spawn
from runtime.process.zygote import Zygote
from tests.harness.wait import wait_for
from tests.linux.runtime.harness import Runtime, pod_config

pytestmark = pytest.mark.root


def children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def zygotes(pid: int) -> list[int]:
    return [c for c in children(pid) if comm(c) == "skiff-zygote"]


def test_runtime_at_rest_runs_no_zygote_until_a_pod(runtime: Runtime, tmp_path: Path) -> None:
    assert runtime.proc is not None
    assert zygotes(runtime.proc.pid) == []
    cfg = pod_config("z", log_directory=str(tmp_path / "logs"))
    runtime.rt.RunPodSandbox(api_pb2.RunPodSandboxRequest(config=cfg))
    assert len(zygotes(runtime.proc.pid)) == 1


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as srv:
        srv.settimeout(10)
        yield srv


@pytest.fixture
def zygote(tmp_path: Path) -> Iterator[Zygote]:
    z = Zygote(tmp_path / "zygote", tmp_path / "zygote.log", idle=2.0)
    z.listen()
    try:
        yield z
    finally:
        z.stop()


def dial(z: Zygote, srv: socket.socket) -> None:
    """A connection dialled by a zygote child (in this process's network
    namespace) that reaches `srv`."""
    port = srv.getsockname()[1]
    with spawn.dial(z, f"/proc/{os.getpid()}/ns/net", port) as out:
        conn, _ = srv.accept()
        with conn:
            out.sendall(b"ping")
            assert conn.recv(4) == b"ping"


def test_zygote_starts_on_demand_and_exits_when_idle(
    zygote: Zygote, listener: socket.socket, tmp_path: Path
) -> None:
    assert zygote.pid is None and zygotes(os.getpid()) == []
    dial(zygote, listener)
    first = zygote.pid
    assert first is not None and comm(first) == "skiff-zygote", (
        tmp_path / "zygote.log"
    ).read_text()
    wait_for(lambda: zygote.pid is None and not zygotes(os.getpid()), message="zygote idle exit")
    dial(zygote, listener)
    assert zygote.starts == 2 and zygote.pid not in (None, first)


def test_request_waiting_as_the_zygote_exits_gets_the_next(
    zygote: Zygote, listener: socket.socket
) -> None:
    dial(zygote, listener)
    first = zygote.pid
    assert first is not None
    os.kill(first, signal.SIGSTOP)  # accepts nothing more
    port = listener.getsockname()[1]
    with zygote.connect({"mode": "dial", "netns": f"/proc/{os.getpid()}/ns/net", "port": port},
                        timeout=15) as s:  # fmt: skip
        os.kill(first, signal.SIGKILL)  # as if it exited idle with the request waiting
        _, fds, _, _ = socket.recv_fds(s, 1024, 1)
    assert len(fds) == 1
    os.close(fds[0])
    listener.accept()[0].close()
    assert zygote.starts == 2 and zygote.pid not in (None, first)


def test_stopped_zygote_refuses(zygote: Zygote, listener: socket.socket) -> None:
    dial(zygote, listener)
    pid = zygote.pid
    zygote.stop()
    assert zygote.pid is None and pid not in children(os.getpid())
    with pytest.raises(spawn.MonitorError):
        dial(zygote, listener)
