"""REST clients of the API benches: a keep-alive HTTPS connection with the
kubeconfig's CA and token, a lean one for creates, and creates/s from 10
client processes with JSON or protobuf bodies (bench.kubeapi, bench.admission_vap).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import socket
import ssl
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.apiserver import Server  # noqa: E402
from bench.crowd import Crowd, in_threads, ops_per_second, shares  # noqa: E402
from bench.pod_security import pod  # noqa: E402
from bench.server_cpu import CpuMark  # noqa: E402
from controlplane.api.k8sproto import envelope as k8sproto  # noqa: E402


class Rest:
    """A keep-alive HTTPS connection with the kubeconfig's CA and token."""

    def __init__(self, kubeconfig: str) -> None:
        doc = yaml.safe_load(Path(kubeconfig).read_text())
        cluster = doc["clusters"][0]["cluster"]
        ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
        hostport = cluster["server"].removeprefix("https://")
        self.host, port = hostport.rsplit(":", 1)
        self.port = int(port)
        self.context = ssl.create_default_context(cadata=ca)
        self.context.check_hostname = False
        self.token = doc["users"][0]["user"]["token"]
        self.conn = self.connect()

    def connect(self, timeout: float = 120) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(
            self.host, self.port, context=self.context, timeout=timeout
        )

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        self.conn.request(method, path, data, self.headers())
        response = self.conn.getresponse()
        return response.status, response.read()


class LeanConnection:
    """Keep-alive HTTPS requests with as little client work as possible (the
    figure is the server's): raw request bytes out, Content-Length read back.
    gRPC's client is C; Python's http.client would cost the shared cores more."""

    def __init__(self, rest: Rest, content_type: str = "application/json",
                 accept: str = "application/json") -> None:  # fmt: skip
        raw = socket.create_connection((rest.host, rest.port))
        self.sock = rest.context.wrap_socket(raw, server_hostname=rest.host)
        self.head = (f"Host: {rest.host}:{rest.port}\r\nAuthorization: Bearer {rest.token}\r\n"
                     f"Content-Type: {content_type}\r\nAccept: {accept}\r\n").encode()  # fmt: skip
        self.buffer = b""

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        self.sock.sendall(b"POST %s HTTP/1.1\r\n%sContent-Length: %d\r\n\r\n%s" % (
            path.encode(), self.head, len(body), body))  # fmt: skip
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += self.sock.recv(65536)
        head, _, rest = self.buffer.partition(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        while len(rest) < length:
            rest += self.sock.recv(65536)
        self.buffer = rest[length:]
        return status, rest[:length]


PROTOBUF = "application/vnd.kubernetes.protobuf"


def _rest_create_proc(kubeconfig: str, threads: int, per_client: int, tag: str, encoding: str,
                      ready: Any, go: Any, out: Any) -> None:  # fmt: skip
    results: list[tuple[float, float, int]] = []
    lock = threading.Lock()

    # Connections and bodies made before `ready`, so the timed part (and the
    # server's CPU taken from `go`) holds no client set-up: protobuf's first
    # encode builds its runtime's classes, which took seconds on a busy machine.
    setup: list[tuple[LeanConnection, list[bytes]]] = []
    for t in range(threads):
        names = [f"{tag}-{os.getpid()}-{t}-{j}" for j in range(per_client)]
        if encoding == "protobuf":  # as client-go sends and accepts it
            conn = LeanConnection(Rest(kubeconfig), PROTOBUF, f"{PROTOBUF}, application/json")
            bodies = [k8sproto.encode(pod(name, j)) for j, name in enumerate(names)]
        else:
            conn = LeanConnection(Rest(kubeconfig))
            bodies = [json.dumps(pod(name, j)).encode() for j, name in enumerate(names)]
        setup.append((conn, bodies))

    def work(t: int) -> None:
        conn, bodies = setup[t]
        go.wait()
        start = time.perf_counter()
        for data in bodies:
            code, body = conn.post("/api/v1/namespaces/bench/pods", data)
            assert code == 201, body[:300]
        end = time.perf_counter()
        with lock:
            results.append((start, end, per_client))

    in_threads(work, threads, ready, results, out)


def rest_creates(
    kubeconfig: Path, clients: int, per_client: int, encoding: str = "json",
    server: Server | None = None, cpu: list[float] | None = None,
) -> float:  # fmt: skip
    """Creates/s; with `server` and `cpu`, the server's CPU seconds from the
    clients' go to their last answer are appended to `cpu`."""
    tag = uuid.uuid4().hex[:6]
    crowd = Crowd(
        _rest_create_proc,
        [(str(kubeconfig), n, per_client, f"r{tag}{i}", encoding)
         for i, n in enumerate(shares(clients))],
    )  # fmt: skip
    crowd.start(settle=0.5)
    mark = CpuMark(server.proc.pid) if server is not None else None
    results = crowd.results(600)
    if mark is not None and cpu is not None:
        cpu.append(mark.seconds())
    return ops_per_second(results)
