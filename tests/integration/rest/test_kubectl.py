"""kubectl itself against a real control plane, over the REST API."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.harness.wait import wait_for
from tests.integration.rest.conftest import KUBECTL, Cluster

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("need_kubectl")]

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: IMAGE
        ports: [{containerPort: 80}]
"""


# Until controlplane.api.openapi is in the tree kubectl cannot fetch a schema
# to validate against; the server validates either way.


def manifest(image: str) -> str:
    return DEPLOYMENT.replace("IMAGE", image)


def test_discovery_lists_every_kind(cluster: Cluster) -> None:
    from controlplane.api.kinds import builtin_kinds

    out = cluster.kubectl("api-resources", "-o", "name").stdout.split()
    for info in builtin_kinds():
        assert info.resource in out, info.resource
    from controlplane.apiserver.rest.version import served_minor

    server = json.loads(cluster.kubectl("version", "-o", "json").stdout)["serverVersion"]
    assert server["gitVersion"] == f"v1.{served_minor()}.0+skiff"


def test_cold_discovery_is_two_requests(cluster: Cluster, tmp_path: Path) -> None:
    """kubectl asks /api and /apis for aggregated discovery and needs no request
    per group/version (18 of them before) when the server answers it."""
    cache = str(tmp_path / "cache")
    done = cluster.kubectl("api-resources", "--cache-dir", cache, "-v=6")
    asked = re.findall(r"GET https://\S+?(/\S*?)(?:\?\S*)? 200", done.stderr)
    assert asked == ["/api", "/apis"], asked
    assert "deployments" in done.stdout and "cronjobs" in done.stdout
    rows = cluster.kubectl("get", "deployments.apps", "-A", "--cache-dir", cache)
    assert rows.returncode == 0


def test_get_describe_label_annotate_delete(cluster: Cluster) -> None:
    cluster.kubectl("create", "configmap", "settings", "--from-literal=a=1")
    got = json.loads(cluster.kubectl("get", "cm", "settings", "-o", "json").stdout)
    assert got["data"] == {"a": "1"} and got["metadata"]["resourceVersion"]
    assert "settings" in cluster.kubectl("get", "configmaps").stdout
    assert "a:" in cluster.kubectl("describe", "cm", "settings").stdout
    cluster.kubectl("label", "cm", "settings", "tier=backend")
    cluster.kubectl("annotate", "cm", "settings", "owner=team-a")
    meta = json.loads(cluster.kubectl("get", "cm", "settings", "-o", "json").stdout)["metadata"]
    assert meta["labels"] == {"tier": "backend"} and meta["annotations"]["owner"] == "team-a"
    names = cluster.kubectl("get", "cm", "-l", "tier=backend", "-o", "name").stdout.split()
    assert names == ["configmap/settings"]
    cluster.kubectl("delete", "cm", "settings")
    missing = cluster.kubectl("get", "cm", "settings", check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr


def test_apply_twice_scale_rollout_undo_wait(cluster: Cluster, tmp_path: Path) -> None:
    path = tmp_path / "web.yaml"
    path.write_text(manifest("nginx:1.25"))
    assert "created" in cluster.kubectl("apply", "-f", str(path)).stdout
    cluster.kubectl("rollout", "status", "deploy/web", "--timeout=60s")
    path.write_text(manifest("nginx:1.26"))
    assert "configured" in cluster.kubectl("apply", "-f", str(path)).stdout
    image = cluster.kubectl(
        "get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}"
    ).stdout
    assert image == "nginx:1.26"
    cluster.kubectl("rollout", "status", "deploy/web", "--timeout=60s")
    cluster.kubectl("scale", "deploy/web", "--replicas=0")
    cluster.kubectl("wait", "--for=condition=Available", "deploy/web", "--timeout=60s")

    def two_revisions() -> bool:
        out = cluster.kubectl("get", "rs", "-l", "app=web", "-o", "name").stdout.split()
        return len(out) == 2

    wait_for(two_revisions, timeout=30, message="two ReplicaSets of web")
    cluster.kubectl("rollout", "undo", "deploy/web")
    wait_for(
        lambda: cluster.kubectl(
            "get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}"
        ).stdout == "nginx:1.25",
        timeout=30, message="the undo to restore nginx:1.25",
    )  # fmt: skip
    cluster.kubectl("delete", "-f", str(path))


def test_scale_subresource(cluster: Cluster, tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(manifest("nginx:1").replace("name: web", "name: scaled"))
    cluster.kubectl("apply", "-f", str(path))
    cluster.kubectl("scale", "deploy/scaled", "--replicas=3")
    assert (
        cluster.kubectl("get", "deploy", "scaled", "-o", "jsonpath={.spec.replicas}").stdout == "3"
    )
    cluster.kubectl("delete", "deploy", "scaled", "--wait=true")


def test_patch_types(cluster: Cluster) -> None:
    cluster.kubectl("create", "configmap", "patched", "--from-literal=a=1")
    cluster.kubectl("patch", "cm", "patched", "--type=merge", "-p", '{"data":{"b":"2"}}')
    cluster.kubectl(
        "patch", "cm", "patched", "--type=json", "-p", '[{"op":"add","path":"/data/c","value":"3"}]'
    )
    cluster.kubectl("patch", "cm", "patched", "-p", '{"data":{"d":"4"}}')  # strategic
    data = json.loads(cluster.kubectl("get", "cm", "patched", "-o", "json").stdout)["data"]
    assert data == {"a": "1", "b": "2", "c": "3", "d": "4"}
    bad = cluster.kubectl(
        "patch", "cm", "patched", "--type=merge", "-p", '{"data":{"x":5}}', check=False
    )
    assert bad.returncode != 0
    after = json.loads(cluster.kubectl("get", "cm", "patched", "-o", "json").stdout)["data"]
    assert after == data  # an invalid patch leaves the object as it was


def test_edit_with_kube_editor(cluster: Cluster, tmp_path: Path) -> None:
    cluster.kubectl("create", "configmap", "edited", "--from-literal=a=1")
    editor = tmp_path / "editor.py"
    editor.write_text(
        textwrap.dedent("""
        import sys
        path = sys.argv[1]
        text = open(path).read()
        open(path, "w").write(text.replace("a: \\"1\\"", "a: \\"changed\\""))
    """)
    )
    env = {"KUBE_EDITOR": f"{sys.executable} {editor}"}
    cluster.kubectl("edit", "cm", "edited", env=env)
    assert cluster.kubectl("get", "cm", "edited", "-o", "jsonpath={.data.a}").stdout == "changed"


def test_get_watch_streams_changes(cluster: Cluster) -> None:
    assert KUBECTL is not None
    cluster.kubectl("create", "configmap", "watched", "--from-literal=a=1")
    proc = subprocess.Popen(
        [KUBECTL, "get", "cm", "watched", "-w", "-o", "jsonpath={.data.a}{\"\\n\"}"],
        stdout=subprocess.PIPE, text=True,
        env=cluster.env(),
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "1"
        cluster.kubectl("patch", "cm", "watched", "--type=merge", "-p", '{"data":{"a":"2"}}')
        assert proc.stdout.readline().strip() == "2"
    finally:
        proc.kill()
        proc.wait()


def test_auth_whoami_can_i_and_bad_token(cluster: Cluster, tmp_path: Path) -> None:
    who = json.loads(cluster.kubectl("auth", "whoami", "-o", "json").stdout)
    assert who["status"]["userInfo"]["username"] == "admin"
    assert cluster.kubectl("auth", "can-i", "delete", "deployments").stdout.strip() == "yes"
    node = cluster.running.server.authority
    assert node is not None
    as_node = tmp_path / "node"
    as_node.write_text(cluster.kubeconfig.read_text().replace(
        cluster.running.admin.token, node.node_token("n1")))  # fmt: skip
    denied = cluster.kubectl("--kubeconfig", str(as_node), "auth", "can-i", "delete", "pods",
                             check=False)  # fmt: skip
    assert denied.stdout.split()[0] == "no"
    bad = tmp_path / "bad"
    bad.write_text(cluster.kubeconfig.read_text().replace("token: skiff-admin.", "token: x"))
    denied = cluster.kubectl("--kubeconfig", str(bad), "get", "pods", check=False)
    assert denied.returncode != 0 and "must be logged in" in denied.stderr


def test_service_account_token_and_reviews(cluster: Cluster, tmp_path: Path) -> None:
    """`kubectl create token` asks serviceaccounts/NAME/token (a TokenRequest the
    registry answers); the token it prints authenticates as that account, and
    a SubjectAccessReview about the account is answered, not stored."""
    cluster.kubectl("create", "serviceaccount", "robot")
    token = cluster.kubectl("create", "token", "robot").stdout.strip()
    as_robot = tmp_path / "robot"
    as_robot.write_text(cluster.kubeconfig.read_text().replace(cluster.running.admin.token, token))
    who = json.loads(cluster.kubectl("--kubeconfig", str(as_robot), "auth", "whoami",
                                     "-o", "json").stdout)  # fmt: skip
    assert who["status"]["userInfo"]["username"] == "system:serviceaccount:default:robot"
    review = ("apiVersion: authorization.k8s.io/v1\nkind: SubjectAccessReview\n"
              "spec: {user: 'system:serviceaccount:default:robot', "
              "resourceAttributes: {verb: delete, resource: nodes}}\n")  # fmt: skip
    answer = json.loads(cluster.kubectl("create", "-f", "-", "-o", "json", input=review).stdout)
    assert answer["status"]["allowed"] is False
    listed = cluster.kubectl("get", "subjectaccessreviews", check=False)
    assert listed.returncode != 0


def test_apply_server_side(cluster: Cluster, tmp_path: Path) -> None:
    path = tmp_path / "ssa.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\ndata: {a: '1'}\n")
    cluster.kubectl("apply", "--server-side", "-f", str(path))
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\ndata: {a: '2'}\n")
    cluster.kubectl("apply", "--server-side", "-f", str(path))
    assert cluster.kubectl("get", "cm", "ssa", "-o", "jsonpath={.data.a}").stdout == "2"


def test_managed_fields_and_strict_field_validation(cluster: Cluster) -> None:
    """Every write records its manager; kubectl's fieldValidation=Strict refuses
    an unknown field and nothing is stored."""
    cluster.kubectl("create", "configmap", "managed", "--from-literal=a=1")
    cluster.kubectl("label", "configmap", "managed", "tier=web")
    got = json.loads(cluster.kubectl("get", "cm", "managed", "-o", "json",
                                     "--show-managed-fields").stdout)  # fmt: skip
    managers = {e["manager"]: e for e in got["metadata"]["managedFields"]}
    assert managers["kubectl-create"]["operation"] == "Update"
    assert "f:data" in managers["kubectl-create"]["fieldsV1"]
    assert "f:metadata" in managers["kubectl-label"]["fieldsV1"]
    bad = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: strict}\ndta: {a: '1'}\n"
    refused = cluster.kubectl("apply", "-f", "-", input=bad, check=False)
    assert refused.returncode != 0 and "dta" in refused.stderr, refused.stderr
    assert cluster.kubectl("get", "cm", "strict", check=False).returncode != 0


def test_tables_for_get_and_get_watch(cluster: Cluster) -> None:
    assert KUBECTL is not None
    cluster.kubectl("create", "configmap", "tabled")
    out = cluster.kubectl("get", "cm", "tabled").stdout.split("\n")
    assert out[0].split()[0] == "NAME" and out[1].split()[0] == "tabled"
    proc = subprocess.Popen(
        [KUBECTL, "get", "cm", "tabled", "-w", "--no-headers"], stdout=subprocess.PIPE, text=True,
        env=cluster.env(),
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().split()[0] == "tabled"
        cluster.kubectl("label", "cm", "tabled", "x=y")
        assert proc.stdout.readline().split()[0] == "tabled"
    finally:
        proc.kill()
        proc.wait()
