"""managedFields and unknown fields as kubectl sees them, whatever wrote the
object: skiffctl and skiff's components write over gRPC, and `kubectl get
--show-managed-fields` shows their entries (status writes beside the
others, with `subresource: status`); kubectl apply of a manifest with a field
the kind does not have warns (the server default) and stores the object
without it, or fails naming it with --validate=strict."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from controlplane.cli.main import main as skiffctl
from controlplane.client.apiclient import connect
from controlplane.client.config import load_config
from tests.harness.wait import wait_for
from tests.integration.rest.conftest import Cluster

pytestmark = pytest.mark.usefixtures("need_kubectl")

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: NAME}
spec:
  replicas: 0
  foo: 1
  selector: {matchLabels: {app: NAME}}
  template:
    metadata: {labels: {app: NAME}}
    spec:
      containers:
      - {name: c, image: busybox, imagee: typo}
"""


def shown(cluster: Cluster, *what: str) -> Any:
    out = cluster.kubectl("get", *what, "-o", "json", "--show-managed-fields").stdout
    return json.loads(out)


def managers(obj: Any) -> dict[tuple[str, str], Any]:
    return {(e["manager"], e.get("subresource", "")): e for e in obj["metadata"]["managedFields"]}


def test_grpc_writes_and_status_writes_show_in_kubectl(cluster: Cluster, tmp_path: Path) -> None:
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: made}\ndata: {a: '1'}\n")
    config = str(cluster.running.admin.path)
    out, err = io.StringIO(), io.StringIO()
    code = skiffctl(["--config", config, "create", "-f", str(manifest)], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    made = managers(shown(cluster, "configmap", "made"))
    assert made[("skiffctl-create", "")]["operation"] == "Update"
    assert "f:a" in made[("skiffctl-create", "")]["fieldsV1"]["f:data"]

    # A Service: no controller writes its status while the test does.
    cluster.kubectl("create", "service", "clusterip", "watched", "--tcp=80")
    with connect(load_config(config), field_manager="skiff-agent") as agent:
        live = agent.get("Service", "watched", "default")
        live["status"] = {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}
        agent.update_status("Service", live)
    condition = {"type": "Seen", "status": "True", "reason": "Test", "message": "seen",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip
    cluster.kubectl("patch", "service", "watched", "--subresource=status", "--type=merge",
                    "-p", json.dumps({"status": {"conditions": [condition]}}))  # fmt: skip
    got = managers(shown(cluster, "service", "watched"))
    assert "f:ports" in got[("kubectl-create", "")]["fieldsV1"]["f:spec"]
    assert got[("skiff-agent", "status")]["fieldsV1"] == {
        "f:status": {"f:loadBalancer": {"f:ingress": {}}}
    }
    conditions = got[("kubectl-patch", "status")]["fieldsV1"]["f:status"]["f:conditions"]
    assert "f:reason" in conditions['k:{"type":"Seen"}']  # merged by type


def test_the_in_process_components_write_under_their_own_names(cluster: Cluster) -> None:
    cluster.kubectl("create", "deployment", "owned", "--image=busybox", "--replicas=0")

    def replica_set() -> Any:
        found = shown(cluster, "replicasets", "-l", "app=owned")["items"]
        return found[0] if found else None

    made = wait_for(replica_set, timeout=30, message="the Deployment's ReplicaSet")
    assert ("kube-controller-manager", "") in managers(made)


def test_apply_warns_of_unknown_fields_and_stores_the_object_without_them(
    cluster: Cluster,
) -> None:
    manifest = DEPLOYMENT.replace("NAME", "warned")
    done = cluster.kubectl("apply", "--validate=warn", "-f", "-", input=manifest)
    assert 'Warning: unknown field "spec.foo"' in done.stderr, done.stderr
    assert 'Warning: unknown field "spec.template.spec.containers[0].imagee"' in done.stderr
    stored = shown(cluster, "deployment", "warned")
    assert "foo" not in stored["spec"]
    assert "imagee" not in stored["spec"]["template"]["spec"]["containers"][0]
    entry = managers(stored)[("kubectl-client-side-apply", "")]
    assert "f:foo" not in entry["fieldsV1"]["f:spec"]

    done = cluster.kubectl(
        "apply", "--server-side", "--validate=warn", "-f", "-",
        input=DEPLOYMENT.replace("NAME", "applied"),
    )  # fmt: skip
    assert 'Warning: unknown field "spec.foo"' in done.stderr, done.stderr
    stored = shown(cluster, "deployment", "applied")
    assert "foo" not in stored["spec"]
    assert "f:foo" not in managers(stored)[("kubectl", "")]["fieldsV1"]["f:spec"]


def test_strict_validation_fails_naming_the_unknown_fields(cluster: Cluster) -> None:
    manifest = DEPLOYMENT.replace("NAME", "strict")
    refused = cluster.kubectl("apply", "--validate=strict", "-f", "-", input=manifest, check=False)
    assert refused.returncode != 0
    assert 'strict decoding error: unknown field "spec.foo"' in refused.stderr, refused.stderr
    assert cluster.kubectl("get", "deployment", "strict", check=False).returncode != 0


def test_repeated_keys_reach_the_server_by_raw_bodies_and_patches(
    cluster: Cluster, tmp_path: Path
) -> None:
    """kubectl decodes a manifest (`apply -f`, `create -f`) before sending it,
    keeping the last of repeated keys, as Kubernetes' kubectl does; a raw body
    and a merge patch's text reach the server as written, where strict
    decoding names the repeat (refused under Strict, a warning by default)."""
    raw = tmp_path / "dup.json"
    raw.write_text('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup"},'
                   '"data":{"a":"1","a":"2"}}')  # fmt: skip
    path = "/api/v1/namespaces/default/configmaps"
    refused = cluster.kubectl("create", "--raw", f"{path}?fieldValidation=Strict", "-f", str(raw),
                              check=False)  # fmt: skip
    assert refused.returncode != 0
    assert 'strict decoding error: duplicate field "data.a"' in refused.stderr, refused.stderr
    assert cluster.kubectl("get", "cm", "dup", check=False).returncode != 0
    done = cluster.kubectl("create", "--raw", path, "-f", str(raw))
    assert 'Warning: duplicate field "data.a"' in done.stderr, done.stderr
    assert shown(cluster, "cm", "dup")["data"] == {"a": "2"}
    done = cluster.kubectl("patch", "cm", "dup", "--type", "merge",
                           "-p", '{"data":{"b":"1","b":"3"}}')  # fmt: skip
    assert 'Warning: duplicate field "data.b"' in done.stderr, done.stderr
    assert shown(cluster, "cm", "dup")["data"] == {"a": "2", "b": "3"}
    manifest = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dupyaml}\ndata:\n  a: '1'\n  a: '2'\n"
    )
    done = cluster.kubectl("apply", "--validate=strict", "-f", "-", input=manifest)
    assert "duplicate" not in done.stderr  # kubectl sent the key once
    assert shown(cluster, "cm", "dupyaml")["data"] == {"a": "2"}
