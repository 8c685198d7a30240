"""Users (issue 16): `skiff user create NAME --group G` writes a credential
whose token carries the user's name and groups; `skiffctl auth can-i`
answers from RBAC through a SelfSubjectAccessReview. On the old code one
admin token was shared by every human: no per-user identity at all."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from controlplane.cli.main import main as skiffctl
from controlplane.client.apiclient import connect
from controlplane.client.config import ClientConfig, load_config, write_config
from controlplane.client.errors import Forbidden
from controlplane.usercmd import main as skiff_user
from tests.harness.apiserver import Cluster

RBAC = "rbac.authorization.k8s.io"


def can_i(conf: Path, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = skiffctl(["--config", str(conf), "auth", "can-i", *args], stdout=out, stderr=out)
    return code, out.getvalue().strip()


@pytest.mark.parametrize("cluster", ["sqlite"], indirect=True)
def test_user_credentials_and_can_i(cluster: Cluster, tmp_path: Path) -> None:
    assert cluster.server.authority is not None
    data_dir = tmp_path / "cp"
    (data_dir / "pki").mkdir(parents=True)
    (data_dir / "pki" / "token-secret").write_bytes(cluster.pki.token_secret)
    (data_dir / "pki" / "ca.crt").write_bytes(cluster.pki.ca_pem)
    write_config(data_dir / "admin.conf", ClientConfig(cluster.address, cluster.pki.ca_pem,
                 cluster.server.authority.admin_token()))  # fmt: skip
    alice_conf = tmp_path / "alice.conf"
    assert skiff_user(["create", "alice", "--group", "devs", "--data-dir", str(data_dir),
                       "-o", str(alice_conf)]) == 0  # fmt: skip
    assert alice_conf.stat().st_mode & 0o777 == 0o600
    written = yaml.safe_load(alice_conf.read_text())  # a kubeconfig, as kubeadm's, for kubectl
    assert written["kind"] == "Config" and written["users"][0]["name"] == "alice"
    assert written["clusters"][0]["cluster"]["server"] == f"https://{cluster.address}"
    assert skiff_user(["create", "system:node:n1", "--data-dir", str(data_dir),
                       "-o", str(tmp_path / "x.conf")]) == 1  # fmt: skip
    with connect(load_config(alice_conf)) as alice:
        assert alice.whoami() == {"user": "alice", "node": "", "admin": False}
        with pytest.raises(
            Forbidden,
            match='User "alice" cannot list resource "pods" in API group "" in the namespace "default"',
        ):
            alice.list("Pod", "default")
    assert can_i(alice_conf, "list", "pods") == (1, "no")
    with connect(load_config(data_dir / "admin.conf")) as admin:
        admin.create("RoleBinding", {
            "metadata": {"name": "devs-edit"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": "devs"}]}, "default")  # fmt: skip
    assert can_i(alice_conf, "list", "pods") == (0, "yes")
    assert can_i(alice_conf, "create", "deployments.apps") == (0, "yes")
    assert can_i(alice_conf, "get", "pods/log") == (0, "yes")
    assert can_i(alice_conf, "list", "pods", "-n", "kube-system") == (1, "no")
    assert can_i(alice_conf, "list", "pods", "-A") == (1, "no")
    assert can_i(alice_conf, "create", "rolebindings") == (1, "no")
    assert can_i(alice_conf, "get", "/healthz") == (0, "yes")
    root_conf = tmp_path / "root.conf"
    assert skiff_user(["create", "root", "--group", "system:masters", "--data-dir",
                       str(data_dir), "-o", str(root_conf)]) == 0  # fmt: skip
    assert can_i(root_conf, "delete", "nodes") == (0, "yes")
