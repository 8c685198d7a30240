"""The runtime's gRPC series (runtime/metrics.py) as containerd names them:
every CRI call counted by method and status code and timed, read back from
its own /metrics with prometheus_client's parser."""

from __future__ import annotations

import urllib.request
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from machinery.metrics import serve
from proto.runtime.v1 import api_pb2 as cri
from proto.runtime.v1 import api_pb2_grpc as cri_grpc
from runtime.metrics import RuntimeMetrics
from tests.fakes.fake_runtime import FakeRuntime


def test_cri_calls_are_counted_by_method_and_code(tmp_path: Path) -> None:
    found = RuntimeMetrics()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                         interceptors=[found.interceptor()])  # fmt: skip
    cri_grpc.add_RuntimeServiceServicer_to_server(FakeRuntime(), server)
    sock = tmp_path / "cri.sock"
    server.add_insecure_port(f"unix:{sock}")
    server.start()
    http = serve(found.registry, "127.0.0.1:0")
    try:
        with grpc.insecure_channel(f"unix:{sock}") as channel:
            stub = cri_grpc.RuntimeServiceStub(channel)
            stub.Version(cri.VersionRequest())
            stub.Version(cri.VersionRequest())
            with pytest.raises(grpc.RpcError):
                stub.ContainerStatus(cri.ContainerStatusRequest(container_id="nope"))
        with urllib.request.urlopen(f"http://127.0.0.1:{http.port}/metrics", timeout=5) as r:
            families = {f.name: f for f in text_string_to_metric_families(r.read().decode())}
    finally:
        http.stop()
        server.stop(None)
    handled = {
        (s.labels["grpc_method"], s.labels["grpc_code"]): s.value
        for s in families["grpc_server_handled"].samples
    }
    assert handled[("Version", "OK")] == 2
    assert handled[("ContainerStatus", "NOT_FOUND")] == 1
    (version,) = [s for s in families["grpc_server_started"].samples
                  if s.labels["grpc_method"] == "Version"]  # fmt: skip
    assert version.labels == {"grpc_type": "unary", "grpc_service": "runtime.v1.RuntimeService",
                              "grpc_method": "Version"}  # fmt: skip
    assert "grpc_server_handling_seconds" in families
    assert "process_cpu_seconds" in families
