"""`FakeAgent`: a real gRPC server on 127.0.0.1:0 speaking
skiff.agent.v1.Agent with canned answers (log chunks, stats or an error),
recording each request with its metadata. Integration tests point a Node
at it (InternalIP + daemonEndpoints.kubeletEndpoint.Port)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc

from proto.agent.v1 import agent_pb2 as pb
from proto.agent.v1 import agent_pb2_grpc as pb_grpc


@dataclass
class Seen:
    request: Any
    metadata: dict[str, str]


@dataclass
class FakeAgent(pb_grpc.AgentServicer):
    """An agent endpoint with canned answers; `abort` makes every call fail."""

    chunks: list[pb.LogChunk] = field(default_factory=list)
    stats: pb.StatsResponse = field(default_factory=pb.StatsResponse)
    # Answers for the next Stats calls, in order, before falling back to `stats`.
    stats_queue: list[pb.StatsResponse] = field(default_factory=list)
    abort: tuple[grpc.StatusCode, str] | None = None
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0
    server: Any = None

    def _record(self, request: Any, context: grpc.ServicerContext) -> None:
        with self.lock:
            self.seen.append(Seen(request, {k: str(v) for k, v in context.invocation_metadata()}))
        if self.abort is not None:
            context.abort(*self.abort)

    def ContainerLogs(
        self, request: pb.LogsRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.LogChunk]:
        self._record(request, context)
        yield from self.chunks

    def Stats(self, request: pb.StatsRequest, context: grpc.ServicerContext) -> pb.StatsResponse:
        self._record(request, context)
        with self.lock:
            if self.stats_queue:
                return self.stats_queue.pop(0)
        return self.stats

    def start(self, credentials: grpc.ServerCredentials | None = None) -> FakeAgent:
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb_grpc.add_AgentServicer_to_server(self, self.server)
        if credentials is not None:
            self.port = self.server.add_secure_port("127.0.0.1:0", credentials)
        else:
            self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop(None)
