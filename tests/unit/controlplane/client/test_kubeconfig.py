"""The kubeconfig the control plane writes: kubectl's format, 0600, and read
back by skiff's own clients (via $KUBECONFIG)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import yaml

from controlplane.client.config import ClientConfig, ConfigError, load_config, write_config
from controlplane.client.kubeconfig import write_kubeconfig

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def test_written_private_and_standard(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    write_kubeconfig(path, "10.0.0.1:6443", CA, "skiff-admin.abc")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    doc = yaml.safe_load(path.read_text())
    assert doc["current-context"] == "skiff"
    assert doc["clusters"][0]["cluster"]["server"] == "https://10.0.0.1:6443"
    assert doc["users"][0]["user"]["token"] == "skiff-admin.abc"
    assert [p.name for p in tmp_path.iterdir()] == ["kubeconfig"]  # no temporary left


def test_read_back_through_kubeconfig_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "kubeconfig"
    write_kubeconfig(path, "10.0.0.1:6443", CA, "tok", grpc="10.0.0.1:6444")
    monkeypatch.delenv("SKIFF_CONFIG", raising=False)
    monkeypatch.setenv("KUBECONFIG", f"{path}:/nonexistent")
    monkeypatch.setenv("HOME", str(tmp_path))
    config = load_config()
    assert (config.server, config.ca_pem, config.token) == ("10.0.0.1:6443", CA, "tok")
    assert config.grpc_target == "10.0.0.1:6444"  # REST at server, gRPC at its own port


def test_admin_conf_names_rest_and_grpc(tmp_path: Path) -> None:
    """admin.conf's server is the REST port; grpc-server, when written, is
    where gRPC goes; --server sends both to one address."""
    path = tmp_path / "admin.conf"
    write_config(path, ClientConfig("10.0.0.1:6443", CA, "tok", grpc_server="10.0.0.1:6444"))
    config = load_config(path)
    assert (config.server, config.grpc_target) == ("10.0.0.1:6443", "10.0.0.1:6444")
    moved = load_config(path, server="10.0.0.2:7443")
    assert (moved.server, moved.grpc_target) == ("10.0.0.2:7443", "10.0.0.2:7443")
    write_config(path, ClientConfig("10.0.0.1:6443", CA, "tok"))
    assert "grpc-server" not in yaml.safe_load(path.read_text())
    assert load_config(path).grpc_target == "10.0.0.1:6443"
    path.write_text(yaml.safe_dump({"server": "10.0.0.1:6443", "grpc-server": 6444}))
    with pytest.raises(ConfigError, match="grpc-server: must be host:port"):
        load_config(path)


def test_missing_context_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "clusters": [],
                                    "contexts": [], "current-context": "gone"}))  # fmt: skip
    with pytest.raises(ConfigError, match="context 'gone' not found"):
        load_config(path)
