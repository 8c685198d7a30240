"""The kubeconfig the control plane writes: kubectl's format, 0600, and read
back by skiff's own clients (via $KUBECONFIG)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import yaml

from controlplane.client.config import ConfigError, load_config
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
    assert (config.server, config.ca_pem, config.token) == ("10.0.0.1:6444", CA, "tok")


def test_missing_context_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "clusters": [],
                                    "contexts": [], "current-context": "gone"}))  # fmt: skip
    with pytest.raises(ConfigError, match="context 'gone' not found"):
        load_config(path)
