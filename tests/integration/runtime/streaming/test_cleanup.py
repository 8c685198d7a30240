"""A client that vanishes mid-stream leaves no process, thread or fd behind."""

from __future__ import annotations

import os
import socket
import threading

from proto.runtime.v1 import api_pb2
from runtime.streaming import StreamingConfig, StreamingServer
from tests.fakes.streaming_backend import HostProcessBackend
from tests.harness.streaming_clients import (
    PortForwardClient,
    RemoteCommand,
    SpdyClient,
    WsClient,
)
from tests.harness.wait import wait_for


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def pid_gone(pid: int) -> bool:
    return not os.path.exists(f"/proc/{pid}")


def settled(baseline: int, threads: int) -> bool:
    return fd_count() <= baseline and threading.active_count() <= threads


def test_spdy_exec_client_disconnect_kills_the_process(
    server: StreamingServer, backend: HostProcessBackend
) -> None:
    baseline, threads = fd_count(), threading.active_count()
    url = server.get_exec(
        api_pb2.ExecRequest(
            container_id="c1",
            cmd=["sh", "-c", "echo started; exec sleep 300"],
            stdin=True,
            stdout=True,
            stderr=True,
        )
    )
    rc = RemoteCommand.open(url, stdin=True)
    wait_for(lambda: b"started" in rc.outputs["stdout"], message="exec started")
    pid = backend.execs[-1].pid
    rc.client.abort()
    for thread in rc.readers:
        thread.join()
    wait_for(lambda: pid_gone(pid), message=f"exec'd pid {pid} gone")
    wait_for(lambda: settled(baseline, threads), message="fds and threads back to baseline")


def test_tty_exec_disconnect(server: StreamingServer, backend: HostProcessBackend) -> None:
    baseline, threads = fd_count(), threading.active_count()
    url = server.get_exec(
        api_pb2.ExecRequest(
            container_id="c1",
            cmd=["sh", "-c", "echo started; sleep 300"],
            stdin=True,
            stdout=True,
            tty=True,
        )
    )
    rc = RemoteCommand.open(url, stdin=True, stderr=False, tty=True)
    wait_for(lambda: b"started" in rc.outputs["stdout"], message="exec started")
    pid = backend.execs[-1].pid
    rc.client.abort()
    for thread in rc.readers:
        thread.join()
    wait_for(lambda: pid_gone(pid), message=f"exec'd pid {pid} gone")
    wait_for(lambda: settled(baseline, threads), message="fds and threads back to baseline")


def test_websocket_client_disconnect(server: StreamingServer, backend: HostProcessBackend) -> None:
    baseline, threads = fd_count(), threading.active_count()
    url = server.get_exec(
        api_pb2.ExecRequest(
            container_id="c1",
            cmd=["sh", "-c", "echo started; exec sleep 300"],
            stdout=True,
            stderr=True,
        )
    )
    client = WsClient(url)
    outputs: dict[int, bytearray] = {}
    client.read_until(1, b"started", outputs)
    pid = backend.execs[-1].pid
    assert client.sock is not None
    client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    client.close()
    wait_for(lambda: pid_gone(pid), message=f"exec'd pid {pid} gone")
    wait_for(lambda: settled(baseline, threads), message="fds and threads back to baseline")


def test_client_that_never_opens_streams_times_out(backend: HostProcessBackend) -> None:
    with StreamingServer(
        backend, StreamingConfig(stream_creation_timeout=0.3, linger=0.5)
    ) as server:
        baseline, threads = fd_count(), threading.active_count()
        url = server.get_exec(api_pb2.ExecRequest(container_id="c1", cmd=["true"], stdout=True))
        client = SpdyClient(url, ("v4.channel.k8s.io",))
        assert client.session is not None
        client.session.closed.wait(5)
        assert client.session.closed.is_set(), "server did not give up on the idle client"
        client.close()
        assert backend.execs == []
        wait_for(lambda: settled(baseline, threads), message="fds and threads back to baseline")


def test_port_forward_disconnect_closes_pod_sockets(server: StreamingServer) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def accept() -> None:
        conn, _ = listener.accept()
        accepted.append(conn)

    thread = threading.Thread(target=accept)
    thread.start()
    baseline, threads = fd_count(), threading.active_count()
    client = PortForwardClient(
        server.get_port_forward(api_pb2.PortForwardRequest(pod_sandbox_id="s"))
    )
    _, data = client.connect(listener.getsockname()[1])
    data.write(b"x")
    thread.join()
    conn = accepted[0]
    assert conn.recv(1) == b"x"
    client.client.abort()
    conn.settimeout(10)
    assert conn.recv(1) == b""  # the server closed its side of the pod connection
    conn.close()
    listener.close()
    wait_for(lambda: settled(baseline - 1, threads - 1), message="fds and threads back to baseline")


def test_stop_ends_live_sessions(backend: HostProcessBackend) -> None:
    threads = threading.active_count()
    server = StreamingServer(backend)
    server.start()
    url = server.get_exec(
        api_pb2.ExecRequest(
            container_id="c1", cmd=["sh", "-c", "echo started; exec sleep 300"], stdout=True
        )
    )
    rc = RemoteCommand.open(url, stderr=False)
    wait_for(lambda: b"started" in rc.outputs["stdout"], message="exec started")
    pid = backend.execs[-1].pid
    server.stop()
    wait_for(lambda: pid_gone(pid), message="exec killed by stop")
    rc.client.close()
    wait_for(lambda: threading.active_count() <= threads, message="threads joined")


def test_stdin_flood_is_bounded_and_stop_still_ends_everything(backend: HostProcessBackend) -> None:
    """A client that ignores flow control and floods stdin to a process that never
    reads: the server's reader waits (bounded buffer) and stop() still unwinds."""
    threads = threading.active_count()
    server = StreamingServer(backend)
    server.start()
    url = server.get_exec(
        api_pb2.ExecRequest(
            container_id="c1",
            cmd=["sh", "-c", "echo started; exec sleep 300"],
            stdin=True,
            stdout=True,
        )
    )
    rc = RemoteCommand.open(url, stdin=True, stderr=False, like_go=True)
    wait_for(lambda: b"started" in rc.outputs["stdout"], message="exec started")
    pid = backend.execs[-1].pid
    sent = [0]

    def flood() -> None:
        assert rc.stdin is not None
        try:
            for _ in range(400):  # 12.8 MB
                rc.stdin.write(b"x" * 32768)
                sent[0] += 32768
        except OSError:
            pass

    flooder = threading.Thread(target=flood)
    flooder.start()
    # the server accepts a bounded amount, then the TCP connection backs up
    wait_for(lambda: sent[0] >= 4 << 20, message="server took the first megabytes")
    server.stop()  # returns only once every connection thread has finished
    wait_for(lambda: pid_gone(pid), message="exec killed by stop")
    rc.client.close()  # wakes the flooder whatever TCP did with its last window probe
    flooder.join()
    assert sent[0] < 400 * 32768
    wait_for(lambda: threading.active_count() <= threads, message="threads joined")


def test_failed_starts_leave_nothing_behind(
    server: StreamingServer, backend: HostProcessBackend
) -> None:
    backend.stopped.add("stopped")
    baseline, threads = fd_count(), threading.active_count()
    for cid, cmd, tty in [
        ("c1", ["/no/such/binary"], False),
        ("c1", ["/no/such/binary"], True),
        ("ghost", ["true"], False),
        ("stopped", ["true"], True),
    ]:
        url = server.get_exec(
            api_pb2.ExecRequest(
                container_id=cid, cmd=cmd, stdin=True, stdout=True, stderr=not tty, tty=tty
            )
        )
        rc = RemoteCommand.open(url, stdin=True, stderr=not tty, tty=tty)
        result = rc.finish()
        assert result.status["status"] == "Failure"
    wait_for(lambda: settled(baseline, threads), message="fds and threads back to baseline")


def test_idle_session_is_ended(backend: HostProcessBackend) -> None:
    config = StreamingConfig(idle_timeout=0.3, linger=0.5)
    with StreamingServer(backend, config) as server:
        url = server.get_exec(
            api_pb2.ExecRequest(
                container_id="c1", cmd=["sh", "-c", "echo started; exec sleep 300"], stdout=True
            )
        )
        rc = RemoteCommand.open(url, stderr=False)
        wait_for(lambda: b"started" in rc.outputs["stdout"], message="exec started")
        pid = backend.execs[-1].pid
        wait_for(lambda: pid_gone(pid), message="idle exec killed")
        assert rc.client.session is not None
        rc.client.session.closed.wait(5)
        rc.client.close()


def test_slow_request_headers_time_out(backend: HostProcessBackend) -> None:
    config = StreamingConfig(request_timeout=0.2)
    with (
        StreamingServer(backend, config) as server,
        socket.create_connection(("127.0.0.1", server.port)) as sock,
    ):
        sock.sendall(b"GET /exec/x HTTP/1.1\r\n")  # and never the rest
        sock.settimeout(10)
        assert sock.recv(100) == b""  # the server hung up
