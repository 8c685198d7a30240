"""Where the APIs listen: REST and gRPC share --listen (ALPN picks), and
--grpc-listen adds a direct gRPC port that admin.conf (grpc-server) and the
kubeconfig's skiff.dev/grpc extension name beside the REST address, which
both files always name as their server: skiffctl's logs, exec and top go
through REST and failed when admin.conf named the gRPC-only port."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import yaml

from controlplane import main as cp_main
from controlplane.client import apirest
from controlplane.client.apiclient import connect
from controlplane.client.config import load_config
from tests.harness.ports import free_port

pytestmark = pytest.mark.slow


def test_grpc_listen_is_named_in_both_credential_files(tmp_path: Path) -> None:
    port, grpc_port = free_port(), free_port()
    args = cp_main.build_parser().parse_args([
        "--listen", f"127.0.0.1:{port}", "--grpc-listen", f"127.0.0.1:{grpc_port}",
        "--data-dir", str(tmp_path / "cp"), "--disable", "scheduler", "--disable", "controllers",
    ])  # fmt: skip
    running = cp_main.start(args)
    try:
        admin = load_config(tmp_path / "cp" / "admin.conf")
        assert (admin.server, admin.grpc_server) == (f"127.0.0.1:{port}", f"127.0.0.1:{grpc_port}")
        kube_path = tmp_path / "cp" / "kubeconfig"
        assert stat.S_IMODE(kube_path.stat().st_mode) == 0o600
        kube = yaml.safe_load(kube_path.read_text())
        assert kube["clusters"][0]["cluster"]["server"] == f"https://127.0.0.1:{port}"
        kube_config = load_config(kube_path)
        assert (kube_config.server, kube_config.grpc_target) == (admin.server, admin.grpc_server)
        for config in (admin, kube_config):
            # REST (what skiffctl logs/exec/top speak) at the file's server ...
            response = apirest.get(config, "/api/v1/namespaces/default", timeout=10)
            try:
                assert response.status == 200
            finally:
                response.close()
            # ... and gRPC at its gRPC-only port.
            with connect(config, timeout=10) as client:
                assert client.whoami()["admin"]
        # gRPC answers on both ports: directly, and relayed behind the REST port.
        for server in (f"127.0.0.1:{grpc_port}", f"127.0.0.1:{port}"):
            with connect(admin.with_server(server), timeout=10) as client:
                assert client.whoami()["admin"]
    finally:
        running.stop()
