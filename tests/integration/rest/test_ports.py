"""Where the APIs listen: REST and gRPC share --listen (ALPN picks), and
--grpc-listen adds a direct gRPC port that admin.conf and the kubeconfig's
skiff.dev/grpc extension name."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import yaml

from controlplane import main as cp_main
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
        assert admin.server == f"127.0.0.1:{grpc_port}"
        kube_path = tmp_path / "cp" / "kubeconfig"
        assert stat.S_IMODE(kube_path.stat().st_mode) == 0o600
        kube = yaml.safe_load(kube_path.read_text())
        assert kube["clusters"][0]["cluster"]["server"] == f"https://127.0.0.1:{port}"
        assert load_config(kube_path).server == f"127.0.0.1:{grpc_port}"
        # gRPC answers on both ports: directly, and relayed behind the REST port.
        for server in (f"127.0.0.1:{grpc_port}", f"127.0.0.1:{port}"):
            with connect(admin.with_server(server), timeout=10) as client:
                assert client.whoami()["admin"]
    finally:
        running.stop()
