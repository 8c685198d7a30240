"""skiffctl apply: create, configure, unchanged; files, directories, stdin; errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.fakes.skiffctl import Ctl

DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, tier: fe}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: busybox}]
"""
SVC = """\
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
"""


def test_apply_creates_then_unchanged_then_configured(ctl: Ctl) -> None:
    r = ctl("apply", "-f", "-", stdin=DEPLOY + "---\n" + SVC)
    assert r.code == 0, r.err
    assert r.out == "deployment.apps/web created\nservice/web created\n"
    assert ctl("apply", "-f", "-", stdin=DEPLOY + "---\n" + SVC).out == (
        "deployment.apps/web unchanged\nservice/web unchanged\n"
    )
    changed = DEPLOY.replace("replicas: 2", "replicas: 3").replace(", tier: fe", "")
    r = ctl("apply", "-f", "-", stdin=changed)
    assert r.out == "deployment.apps/web configured\n"
    live = ctl.client.get("Deployment", "web", "default")
    assert live["spec"]["replicas"] == 3
    assert live["metadata"]["labels"] == {"app": "web"}  # removed from the manifest: removed
    recorded = json.loads(
        live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    )
    assert recorded["spec"]["replicas"] == 3


def test_apply_keeps_fields_others_set_and_tolerates_server_defaults(ctl: Ctl) -> None:
    ctl("apply", "-f", "-", stdin=DEPLOY)
    live = ctl.client.get("Deployment", "web", "default")
    live["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "Always"
    live["spec"]["paused"] = True
    ctl.client.update("Deployment", live)
    assert ctl("apply", "-f", "-", stdin=DEPLOY).out == "deployment.apps/web unchanged\n"
    r = ctl("apply", "-f", "-", stdin=DEPLOY.replace("replicas: 2", "replicas: 4"))
    assert r.out == "deployment.apps/web configured\n"
    assert ctl.client.get("Deployment", "web", "default")["spec"]["paused"] is True


def test_apply_directory_in_name_order_and_namespace_flag(ctl: Ctl, tmp_path: Path) -> None:
    (tmp_path / "b-svc.yaml").write_text(SVC)
    (tmp_path / "a-deploy.yml").write_text(DEPLOY)
    (tmp_path / "notes.txt").write_text("not a manifest")
    r = ctl("apply", "-n", "prod", "-f", str(tmp_path))
    assert r.code == 0, r.err
    assert r.out == "deployment.apps/web created\nservice/web created\n"
    assert ctl.client.get("Service", "web", "prod")["metadata"]["namespace"] == "prod"


def test_apply_list_kind_and_cluster_scoped(ctl: Ctl, tmp_path: Path) -> None:
    f = tmp_path / "list.yaml"
    f.write_text(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: Namespace, metadata: {name: team}}\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: team}, data: {a: b}}\n"
    )
    r = ctl("apply", "-f", str(f))
    assert r.out == "namespace/team created\nconfigmap/c created\n", r.err


def test_apply_errors(ctl: Ctl, tmp_path: Path) -> None:
    r = ctl("apply", "-f", str(tmp_path / "missing.yaml"))
    assert r.code == 1 and "does not exist" in r.err
    r = ctl("apply", "-f", "-", stdin="apiVersion: v1\nkind: Gizmo\nmetadata: {name: x}\n")
    assert r.code == 1 and 'no matches for kind "Gizmo"' in r.err and "Deployment" in r.err
    r = ctl("apply", "-f", "-", stdin="apiVersion: v2\nkind: Pod\nmetadata: {name: x}\n")
    assert r.code == 1 and 'in version "v2"' in r.err
    r = ctl("apply", "-f", "-", stdin="kind: Pod\n")
    assert r.code == 1 and "apiVersion not set" in r.err
    r = ctl("apply", "-f", "-", stdin="a: [\n")
    assert r.code == 1 and "error parsing STDIN" in r.err
    r = ctl(
        "apply",
        "-n",
        "other",
        "-f",
        "-",
        stdin=SVC.replace("{name: web}", "{name: web, namespace: prod}"),
    )
    assert r.code == 1 and "does not match the namespace" in r.err
    assert ctl("apply").code == 2  # -f is required: usage


def test_apply_reports_server_error_and_continues(ctl: Ctl) -> None:
    from controlplane.client import errors

    ctl.client.fail("create", errors.Invalid("spec.replicas: must be >= 0"), kind="Deployment")
    r = ctl("apply", "-f", "-", stdin=DEPLOY + "---\n" + SVC)
    assert r.code == 1
    assert "spec.replicas: must be >= 0" in r.err and "deployment.apps/web" in r.err
    assert r.out == "service/web created\n"


def test_apply_dry_run_writes_nothing(ctl: Ctl) -> None:
    r = ctl("apply", "--dry-run=client", "-f", "-", stdin=DEPLOY)
    assert r.out == "deployment.apps/web created (dry run)\n"
    assert ctl.client.objects("Deployment") == []
    ctl("apply", "-f", "-", stdin=DEPLOY)
    r = ctl(
        "apply", "--dry-run=client", "-f", "-", stdin=DEPLOY.replace("replicas: 2", "replicas: 5")
    )
    assert r.out == "deployment.apps/web configured (dry run)\n"
    assert ctl.client.get("Deployment", "web", "default")["spec"]["replicas"] == 2
    assert not ctl.client.calls_of("patch")
    assert ctl("apply", "--dry-run=server", "-f", "-", stdin=DEPLOY).code == 1


def test_manifests_of_volcanos_own_job_and_a_deep_one(tmp_path: Path) -> None:
    """A Volcano Job in Volcano's own apiVersion is Job.batch.volcano.sh (not
    refused as the batch/v1 Job's), and a manifest nested past the API's
    depth limit is refused naming its depth, before PyYAML's recursion."""
    from controlplane.cli.context import CliError
    from controlplane.cli.resources import check_manifest, load_manifests

    vc = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"}}
    assert check_manifest(vc, "vc.yaml").key == "Job.batch.volcano.sh"
    plain = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}}
    assert check_manifest(plain, "job.yaml").key == "Job"
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 900 + "]" * 900 + "\n")
    with pytest.raises(CliError, match="nested 901 levels deep"):
        load_manifests([str(deep)], io.StringIO())
