"""Encryption at rest for Secrets (issue 32), as kube-apiserver's
EncryptionConfiguration: through the API, a Secret is readable as ever, while
the SQLite file (0600) never holds it in the clear; keys rotate; k3s'
--secrets-encryption makes a key of its own."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane.apiserver.server import ApiServer, ApiServerConfig, resource_prefix
from controlplane.apiserver.tls import ensure_pki
from controlplane.client.apiclient import connect
from controlplane.client.config import ClientConfig
from controlplane.storage import encryption
from controlplane.storage.encryption import EncryptionError
from controlplane.storage.sqlite import SqliteStore

PASSWORD = "hunter2-do-not-store-me"


def key(n: int) -> str:
    return base64.b64encode(bytes([n]) * 32).decode()


def config(tmp: Path, *providers: dict[str, object], name: str = "enc.yaml") -> Path:
    doc = {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration",
           "resources": [{"resources": ["secrets"], "providers": list(providers)}]}  # fmt: skip
    path = tmp / name
    path.write_text(json.dumps(doc))
    return path


def aescbc(*names: str) -> dict[str, object]:
    return {"aescbc": {"keys": [{"name": n, "secret": key(i + 1)} for i, n in enumerate(names)]}}


class Served:
    def __init__(self, tmp: Path, cfg: Path | None) -> None:
        self.db = tmp / "state.db"
        self.pki = ensure_pki(tmp)
        self.server = ApiServer(SqliteStore(self.db), ApiServerConfig(
            encryption_provider_config=str(cfg) if cfg else ""), self.pki)  # fmt: skip
        port = self.server.start()
        assert self.server.authority is not None
        self.api = connect(ClientConfig(f"127.0.0.1:{port}", self.pki.ca_pem,
                                        self.server.authority.admin_token()))  # fmt: skip

    def close(self) -> None:
        self.api.close()
        self.server.stop()
        self.server.store.close()

    def stored(self, key: str) -> bytes:
        """The current value of `key` as on disk."""
        with sqlite3.connect(self.db) as db:
            (value,) = db.execute("SELECT value FROM objects WHERE key = ?", (key,)).fetchone()
            return bytes(value)

    def raw(self) -> bytes:
        """Every value in the database file (objects and their history), as on disk."""
        with sqlite3.connect(self.db) as db:
            rows = db.execute("SELECT value FROM objects UNION ALL SELECT value FROM history "
                              "UNION ALL SELECT prev FROM history WHERE prev IS NOT NULL")  # fmt: skip
            return b"".join(bytes(v) for (v,) in rows)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[list[Served]]:
    made: list[Served] = []
    yield made
    for s in made:
        s.close()


def secret(name: str = "db") -> dict[str, object]:
    return {"metadata": {"name": name}, "stringData": {"password": PASSWORD}}


def test_secrets_are_encrypted_on_disk_and_the_file_is_private(
    tmp_path: Path, served: list[Served]
) -> None:
    s = Served(tmp_path, config(tmp_path, aescbc("key1"), {"identity": {}}))
    served.append(s)
    s.api.create("Secret", secret(), "default")
    got = s.api.get("Secret", "db", "default")
    assert base64.b64decode(got["data"]["password"]).decode() == PASSWORD
    disk = s.raw()
    assert b"k8s:enc:aescbc:v1:key1:" in disk
    assert base64.b64encode(PASSWORD.encode()) not in disk and PASSWORD.encode() not in disk
    assert os.stat(s.db).st_mode & 0o777 == 0o600
    # a list and a watch see the plaintext too
    assert [i["metadata"]["name"] for i in s.api.list("Secret", "default").items] == ["db"]


def test_a_secret_charged_to_a_quota_is_encrypted_too(tmp_path: Path, served: list[Served]) -> None:
    """Under a quota the Secret is stored with its charge in one store write
    (Store.update_and_create), which encrypts it as a plain create does."""
    s = Served(tmp_path, config(tmp_path, aescbc("key1"), {"identity": {}}))
    served.append(s)
    made = s.api.create("ResourceQuota", {"metadata": {"name": "q"},
                                          "spec": {"hard": {"count/secrets": "5"}}}, "default")  # fmt: skip
    made["status"] = {"hard": {"count/secrets": "5"}, "used": {"count/secrets": "0"}}
    s.api.update_status("ResourceQuota", made)
    s.api.create("Secret", secret(), "default")
    assert s.api.get("ResourceQuota", "q", "default")["status"]["used"] == {"count/secrets": "1"}
    got = s.api.get("Secret", "db", "default")
    assert base64.b64decode(got["data"]["password"]).decode() == PASSWORD
    disk = s.raw()
    assert s.stored("/registry/secrets/default/db").startswith(b"k8s:enc:aescbc:v1:key1:")
    assert base64.b64encode(PASSWORD.encode()) not in disk and PASSWORD.encode() not in disk


def test_keys_rotate_as_in_kubernetes(tmp_path: Path, served: list[Served]) -> None:
    s = Served(tmp_path, config(tmp_path, aescbc("old")))
    s.api.create("Secret", secret("a"), "default")
    s.close()
    # the new key first, the old one kept for reading: old Secrets read, new ones use it
    s = Served(tmp_path, config(tmp_path, {"aescbc": {"keys": [
        {"name": "new", "secret": key(9)}, {"name": "old", "secret": key(1)}]}}))  # fmt: skip
    served.append(s)
    assert s.api.get("Secret", "a", "default")["data"]
    current = s.api.get("Secret", "a", "default")
    current["metadata"]["annotations"] = {"rewritten": "yes"}
    s.api.update("Secret", current)  # rewriting encrypts with the new key
    s.api.create("Secret", secret("b"), "default")
    for name in ("a", "b"):
        assert s.stored(f"/registry/secrets/default/{name}").startswith(b"k8s:enc:aescbc:v1:new:")
    s.close()
    served.remove(s)
    s = Served(tmp_path, config(tmp_path, {"secretbox": {"keys": [{"name": "box",
               "secret": key(5)}]}}, {"aescbc": {"keys": [{"name": "new", "secret": key(9)}]}}))  # fmt: skip
    served.append(s)
    assert s.api.get("Secret", "a", "default")["metadata"]["annotations"] == {"rewritten": "yes"}
    s.api.create("Secret", secret("c"), "default")
    assert s.stored("/registry/secrets/default/c").startswith(b"k8s:enc:secretbox:v1:box:")


def test_without_the_key_a_secret_cannot_be_read(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "state.db")
    try:
        from controlplane.storage.encrypted import EncryptedStore

        sealed = EncryptedStore(store, encryption.parse(
            json.loads(config(tmp_path, aescbc("k")).read_text()), "t", resource_prefix))  # fmt: skip
        sealed.create("/registry/secrets/default/x", b'{"data":{}}')
        other = EncryptedStore(store, encryption.parse(
            json.loads(config(tmp_path, aescbc("other")).read_text()), "t", resource_prefix))  # fmt: skip
        with pytest.raises(EncryptionError, match="no aescbc key named 'k'"):
            other.get("/registry/secrets/default/x")
    finally:
        store.close()


@pytest.mark.parametrize(("providers", "problem"), [
    ([{"aescbc": {"keys": [{"name": "k", "secret": base64.b64encode(b"short").decode()}]}}],
     "a aescbc key is 16 or 24 or 32 bytes, not 5"),
    ([{"aesgcm": {"keys": []}}], "unsupported provider 'aesgcm'"),
    ([{"secretbox": {"keys": [{"name": "k", "secret": "!!"}]}}], "secret: not base64"),
])  # fmt: skip
def test_a_bad_configuration_is_refused_naming_the_field(
    tmp_path: Path, providers: list[dict[str, object]], problem: str
) -> None:
    with pytest.raises(EncryptionError, match=problem):
        encryption.load(config(tmp_path, *providers), resource_prefix)


def test_secrets_encryption_makes_its_own_key(tmp_path: Path) -> None:
    from controlplane.main import build_parser, encryption_config

    args = build_parser().parse_args(["--secrets-encryption"])
    path = Path(encryption_config(args, tmp_path))
    assert os.stat(path).st_mode & 0o777 == 0o600
    first = path.read_text()
    assert encryption.load(path, resource_prefix)
    assert Path(encryption_config(args, tmp_path)).read_text() == first  # kept across restarts
    assert encryption_config(build_parser().parse_args([]), tmp_path) == ""
