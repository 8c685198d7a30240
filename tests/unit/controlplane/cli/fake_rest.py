"""Stand-ins for the API server's pods/log, nodes/stats (FakeRest) and
pods/exec, attach, portforward (UpgradeFront), for skiffctl's unit tests.

It resolves the pod or node through the fake API client, calls the node's
in-test agent (FakeAgent) over gRPC as the real API server does (without
any token) and answers as the REST API would: the log bytes, the stats as
JSON, or a Status with the agent's message. It records the Authorization
header skiffctl sent it.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import grpc
from google.protobuf.json_format import MessageToDict

from agent.stream_proxy import relay
from controlplane.client import errors
from controlplane.client.agents import AgentUnreachable, agent_address
from machinery.rpc_errors import rpc_status
from proto.agent.v1 import agent_pb2 as pb
from proto.agent.v1 import agent_pb2_grpc as pb_grpc

STATUS = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.UNAUTHENTICATED: 403,
}


class FakeRest:
    def __init__(self, client: Any) -> None:
        self.client = client
        self.auth: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                owner.auth.append(self.headers.get("Authorization", ""))
                try:
                    owner.serve(self)
                except errors.NotFound as err:
                    self.status(404, str(err))
                except AgentUnreachable as err:
                    self.status(503, str(err))

            def status(self, code: int, message: str) -> None:
                body = json.dumps({"kind": "Status", "code": code, "message": message}).encode()
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def serve(self, h: Any) -> None:
        url = urlsplit(h.path)
        q = {k: v[-1] for k, v in parse_qs(url.query).items()}
        parts = url.path.strip("/").split("/")
        if parts[:3] == ["api", "v1", "nodes"] and parts[4:] == ["stats"]:
            node = self.client.get("Node", parts[3])
            self.call(
                h,
                parts[3],
                node,
                "Stats",
                pb.StatsRequest(namespace=q.get("namespace", ""), pod=q.get("pod", "")),
            )
            return
        ns, name = parts[3], parts[5]
        pod = self.client.get("Pod", name, ns)
        node_name = pod["spec"]["nodeName"]
        has_tail = "tailLines" in q
        tail = int(q.get("tailLines", "0"))
        request = pb.LogsRequest(
            namespace=ns, pod=name, container=q.get("container", ""),
            follow=q.get("follow") == "true", tail_lines=-1 if has_tail and tail == 0 else tail,
            since_seconds=int(q.get("sinceSeconds", "0")), previous=q.get("previous") == "true",
            timestamps=q.get("timestamps") == "true", limit_bytes=int(q.get("limitBytes", "0")),
        )  # fmt: skip
        self.call(h, node_name, self.client.get("Node", node_name), "ContainerLogs", request)

    def call(self, h: Any, name: str, node: Any, method: str, request: Any) -> None:
        address = agent_address(node)
        with grpc.insecure_channel(address) as channel:
            stub = pb_grpc.AgentStub(channel)
            try:
                if method == "Stats":
                    body = json.dumps(MessageToDict(stub.Stats(request, timeout=5))).encode()
                else:
                    body = b"".join(c.data for c in stub.ContainerLogs(request, timeout=5))
            except grpc.RpcError as err:
                code, details = rpc_status(err)
                if code in STATUS:
                    h.status(STATUS[code], details)
                else:
                    h.status(503, f"cannot reach the agent of node {name} at {address}: {details}")
                return
        h.send_response(200)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)


class UpgradeFront:
    """A stand-in for the API server's pods/exec, pods/attach and
    pods/portforward in front of an agent stream proxy (plain text, unit
    tests only): it checks skiffctl's bearer token (401 otherwise), drops it,
    rewrites the path to the agent's and relays the bytes both ways."""

    def __init__(self, agent_port: int, token: str) -> None:
        self.agent_port = agent_port
        self.token = token
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def stop(self) -> None:
        self.sock.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                data = conn.recv(4096)
                if not data:
                    return
                head += data
            raw, _, rest = head.partition(b"\r\n\r\n")
            first, *lines = raw.decode("latin-1").split("\r\n")
            method, target, version = first.split(" ")
            auth = [
                v for k, _, v in (h.partition(": ") for h in lines) if k.lower() == "authorization"
            ]
            if auth != [f"Bearer {self.token}"]:
                body = json.dumps({"kind": "Status", "code": 401, "message": "Unauthorized"})
                conn.sendall(
                    f"HTTP/1.1 401 Unauthorized\r\nContent-Length: {len(body)}\r\n\r\n{body}".encode()
                )
                return
            url = urlsplit(target)
            _, _, _, ns, _, pod, kind = url.path.strip("/").split("/")
            q = parse_qs(url.query)
            path = f"/{kind}/{ns}/{pod}"
            if kind != "portforward":
                path += f"/{q.get('container', [''])[-1]}"
            kept = [h for h in lines if not h.lower().startswith("authorization:")]
            out = "\r\n".join([f"{method} {path}?{url.query} {version}", *kept]) + "\r\n\r\n"
            with socket.create_connection(("127.0.0.1", self.agent_port)) as upstream:
                upstream.sendall(out.encode("latin-1") + rest)
                relay(conn, None, upstream)
