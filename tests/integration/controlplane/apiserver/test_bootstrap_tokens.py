"""Bootstrap tokens (issue 16): `<6>.<16>` tokens stored as Secrets in
kube-system, expiring, revocable, each join good for one new node name only.
On the old code the one join token never expired, could not be revoked
without rotating the admin token, and could claim a running node's name."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import pytest

from controlplane.api import bootstraptoken as bt
from controlplane.apiserver.bootstrap import BootstrapJoin
from controlplane.client.apiclient import connect, join
from controlplane.client.config import ClientConfig, write_config
from controlplane.client.errors import Forbidden, Invalid, Unauthenticated
from controlplane.tokencmd import main as token_main
from tests.harness.apiserver import Cluster


def joins(cluster: Cluster) -> BootstrapJoin:
    assert cluster.server.joins is not None
    return cluster.server.joins


def test_token_format_and_secret_layout() -> None:
    token = bt.generate()
    assert re.fullmatch(r"[a-z0-9]{6}\.[a-z0-9]{16}", token)
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    secret = bt.token_secret(token, now, datetime.timedelta(hours=2), "for n1")
    assert secret["metadata"] == {
        "name": f"bootstrap-token-{token[:6]}",
        "namespace": "kube-system",
    }
    assert secret["type"] == "bootstrap.kubernetes.io/token"
    info = bt.info(secret)
    assert info == bt.TokenInfo(token[:6], "2026-01-01T02:00:00Z",
                                ("authentication", "signing"), "for n1")  # fmt: skip
    with pytest.raises(Invalid):
        bt.token_secret("abc.def", now)


def test_a_token_joins_one_new_node_and_never_an_existing_one(cluster: Cluster) -> None:
    token = joins(cluster).create(datetime.timedelta(hours=1))
    config = join(cluster.address, cluster.pki.ca_pem, token, "n1")
    with connect(config) as n1:
        assert n1.whoami()["node"] == "n1"
        n1.create("Node", {"metadata": {"name": "n1"}})
    # The same token cannot claim the running node's name (and so its pods and secrets).
    with pytest.raises(Forbidden, match='node "n1" already exists'):
        join(cluster.address, cluster.pki.ca_pem, token, "n1")
    config2 = join(cluster.address, cluster.pki.ca_pem, token, "n2")
    with connect(config2) as n2:
        assert n2.whoami()["node"] == "n2"


def test_expired_wrong_and_deleted_tokens_are_refused(cluster: Cluster) -> None:
    j = joins(cluster)
    old = BootstrapJoin(
        j.registry,
        j.node_credential,
        now=lambda: datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=2),
    )
    expired = old.create(datetime.timedelta(hours=1))
    with pytest.raises(Unauthenticated, match="expired"):
        join(cluster.address, cluster.pki.ca_pem, expired, "n1")
    token = j.create()
    wrong = token[:7] + ("a" if token[7] != "a" else "b") + token[8:]
    with pytest.raises(Unauthenticated, match="invalid bootstrap token"):
        join(cluster.address, cluster.pki.ca_pem, wrong, "n1")
    with cluster.client() as admin:
        admin.delete("Secret", f"bootstrap-token-{token[:6]}", "kube-system")
    with pytest.raises(Unauthenticated, match="invalid bootstrap token"):
        join(cluster.address, cluster.pki.ca_pem, token, "n1")
    signing = bt.generate()
    j.registry.create("Secret", bt.token_secret(signing, j.now(), None, "", ("signing",)),
                      "kube-system")  # fmt: skip
    with pytest.raises(Unauthenticated, match="may not be used to authenticate"):
        join(cluster.address, cluster.pki.ca_pem, signing, "n1")


def test_skiff_token_create_list_delete(
    cluster: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cluster.server.authority is not None
    conf = tmp_path / "admin.conf"
    write_config(conf, ClientConfig(cluster.address, cluster.pki.ca_pem,
                                    cluster.server.authority.admin_token()))  # fmt: skip
    assert token_main(["--config", str(conf), "create", "--ttl", "1h", "--description", "n1"]) == 0
    token = capsys.readouterr().out.strip()
    assert bt.split(token) is not None
    assert token_main(["--config", str(conf), "list"]) == 0
    listing = capsys.readouterr().out
    assert token[:6] in listing and token[7:] not in listing and " n1" in listing
    config = join(cluster.address, cluster.pki.ca_pem, token, "n1")
    assert token_main(["--config", str(conf), "delete", token]) == 0
    capsys.readouterr()
    # Revoked: no new joins; the node that joined and the admin keep working.
    with pytest.raises(Unauthenticated):
        join(cluster.address, cluster.pki.ca_pem, token, "n9")
    with connect(config) as n1:
        assert n1.whoami()["node"] == "n1"
    assert token_main(["--config", str(conf), "list"]) == 0
    assert token[:6] not in capsys.readouterr().out
    assert token_main(["--config", str(conf), "delete", "zzzzzz"]) == 1
    assert "not found" in capsys.readouterr().err


def test_the_join_token_file_is_a_bootstrap_token_made_at_first_start(
    cluster: Cluster, tmp_path: Path
) -> None:
    from controlplane.main import ensure_join_token

    (tmp_path / "join-token").write_text("skiff-join.0123456789abcdef\n")  # the old kind
    token = ensure_join_token(tmp_path, joins(cluster))
    assert bt.split(token) is not None
    assert (tmp_path / "join-token").read_text().strip() == token
    assert (tmp_path / "join-token").stat().st_mode & 0o777 == 0o600
    assert ensure_join_token(tmp_path, joins(cluster)) == token  # a restart keeps it
    with cluster.client() as admin:
        admin.delete("Secret", f"bootstrap-token-{token[:6]}", "kube-system")
    # Revoked stays revoked across restarts: the file is not turned into a new token.
    assert ensure_join_token(tmp_path, joins(cluster)) == token
    with pytest.raises(Unauthenticated):
        join(cluster.address, cluster.pki.ca_pem, token, "n1")
