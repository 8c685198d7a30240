"""Issue 16's attack: "The cluster-wide admin token is sent in cleartext to the
agent endpoint ... Anyone holding the join token can register a node named
anything, point its address at a host of theirs and collect the admin token."

A rogue joins with the join token (getting its node credential and even a
serving certificate for its own name), registers Node "rogue" whose address
points at a listener this test controls, and waits. Pods bound to "rogue"
are then read by `skiffctl logs`, `exec`, `top` and the HPA's metrics
poller, as an admin. The listener records everything a caller sends it:
plain HTTP heads, gRPC metadata (plain or, when the caller speaks TLS, after
terminating it with the rogue's own certificate) and the client
certificates presented. On the old code skiffctl dialled the node's address
itself with the admin's bearer token; now only the API server calls agents,
with its client certificate, and no token of any identity arrives.
"""

from __future__ import annotations

import io
import socket
import ssl
import threading
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from agent import serving_tls
from agent.stream_proxy import pump
from controlplane.client.agents import agent_csr
from controlplane.client.apiclient import connect, join_node
from controlplane.client.config import load_config
from tests.harness.controlplane import ControlPlane

pytestmark = pytest.mark.slow


@dataclass
class Listener:
    """What the rogue runs at the address its Node advertises."""

    tls: ssl.SSLContext
    heads: list[bytes] = field(default_factory=list)
    metadata: list[dict[str, str]] = field(default_factory=list)
    client_certs: list[str] = field(default_factory=list)
    connections: int = 0
    plain: int = 0  # connections that did not start a TLS handshake
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> Listener:
        recorder = self

        class Record(grpc.GenericRpcHandler):
            def service(self, details: Any) -> None:
                with recorder.lock:
                    recorder.metadata.append({k: str(v) for k, v in details.invocation_metadata})

        self.grpc = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self.grpc.add_generic_rpc_handlers((Record(),))
        self.grpc_port = self.grpc.add_insecure_port("127.0.0.1:0")
        self.grpc.start()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self) -> None:
        self.sock.close()
        self.grpc.stop(None)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with self.lock:
            self.connections += 1
        conn.settimeout(10)
        try:
            first = conn.recv(5, socket.MSG_PEEK)
            if first[:1] == b"\x16":  # a TLS ClientHello: answer as the rogue node
                tls = self.tls.wrap_socket(conn, server_side=True)
                cert: Any = tls.getpeercert() or {}
                names = [v for rdn in cert.get("subject", ()) for k, v in rdn if k == "commonName"]
                with self.lock:
                    self.client_certs.append(str(names[0]) if names else "")
                conn, h2 = tls, tls.selected_alpn_protocol() == "h2"
            else:
                with self.lock:
                    self.plain += 1
                h2 = first == b"PRI *"
            if h2:
                upstream = socket.create_connection(("127.0.0.1", self.grpc_port))
                pump(conn, upstream, 10)
                upstream.close()
                return
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                data = conn.recv(4096)
                if not data:
                    break
                head += data
            with self.lock:
                self.heads.append(head)
            conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        except (OSError, ssl.SSLError):
            pass
        finally:
            conn.close()


@dataclass
class Rogue:
    cp: ControlPlane
    listener: Listener
    admin_token: str

    def ctl(self, *args: str) -> tuple[int, str]:
        from controlplane.cli.main import main

        out, err = io.StringIO(), io.StringIO()
        code = main(
            ["--config", str(self.cp.data_dir / "admin.conf"), *args], stdout=out, stderr=err
        )
        return code, out.getvalue() + err.getvalue()


@pytest.fixture(scope="module")
def rogue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rogue]:
    base = Path(tmp_path_factory.mktemp("rogue"))
    cp = ControlPlane(base / "data", ["--store", "sqlite"]).start()
    listener: Listener | None = None
    try:
        admin = load_config(cp.data_dir / "admin.conf")
        join_token = (cp.data_dir / "join-token").read_text().strip()
        csr, key = agent_csr("rogue", ["127.0.0.1"])
        node_cfg, cert = join_node(admin.server, admin.ca_pem, join_token, "rogue", csr)
        serving_tls.save(base / "rogue", cert, key)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(base / "rogue" / "serving.crt", base / "rogue" / "serving.key")
        context.load_verify_locations(cadata=admin.ca_pem.decode())
        context.verify_mode = ssl.CERT_OPTIONAL
        context.set_alpn_protocols(["h2", "http/1.1"])
        listener = Listener(context).start()
        with connect(node_cfg) as node:
            node.create("Node", {
                "metadata": {"name": "rogue"},
                "status": {
                    "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                    "daemonEndpoints": {"kubeletEndpoint": {"Port": listener.port}},
                    "allocatable": {"cpu": "4", "memory": "8Gi"},
                },
            })  # fmt: skip
        client = cp.client()
        pod = client.create("Pod", {
            "metadata": {"name": "victim", "namespace": "default"},
            "spec": {"nodeName": "rogue", "containers": [{"name": "app", "image": "busybox"}]},
        }, "default")  # fmt: skip
        pod["status"] = {"phase": "Running"}
        client.update_status("Pod", pod)
        yield Rogue(cp, listener, admin.token)
    finally:
        if listener is not None:
            listener.stop()
        cp.close()


def test_a_rogue_node_collects_no_token(rogue: Rogue) -> None:
    from controlplane.controllers.agent_metrics import AgentMetrics

    rogue.ctl("logs", "victim")
    rogue.ctl("exec", "victim", "--", "true")
    rogue.ctl("top", "pods")
    rogue.ctl("top", "nodes")
    admin = load_config(rogue.cp.data_dir / "admin.conf")
    with connect(admin) as client:
        # As `skiff controlplane` runs it: the REST API named by the kubeconfig.
        rest = load_config(rogue.cp.data_dir / "kubeconfig")
        assert AgentMetrics(client, rest, timeout=5).pod_metrics("default", "cpu") == {}

    seen = rogue.listener
    assert seen.connections > 0, "nothing dialled the rogue's address: the test proves nothing"
    for md in seen.metadata:
        assert "authorization" not in md, f"a token reached the rogue node: {md}"
    for head in seen.heads:
        assert b"authorization" not in head.lower(), f"a token reached the rogue node: {head!r}"
    every = b"".join(seen.heads) + repr(seen.metadata).encode()
    assert rogue.admin_token.encode() not in every
    # Whoever called spoke TLS and presented the API server's certificate only.
    assert seen.plain == 0 and seen.client_certs
    assert set(seen.client_certs) == {"system:apiserver"}
