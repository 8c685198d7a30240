"""The real kubectl against the pure API modules (through a tiny test stub,
not the REST server): the patches `kubectl apply`, `apply --server-side`,
`patch` and `edit` actually send are applied as Kubernetes applies them,
`kubectl explain` reads the OpenAPI v3 documents, `kubectl get` prints the
Table columns."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controlplane.api import server_side_apply
from tests.harness.kubectl import GO_ENV, NEWEST
from tests.integration.controlplane.apisupport.kubectl_stub import Stub, running

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not NEWEST.exists(), reason=f"kubectl is not installed at {NEWEST}"),
]

PATH = "/apis/apps/v1/namespaces/default/deployments/web"
LAST = "kubectl.kubernetes.io/last-applied-configuration"


def manifest(image: str, replicas: int, containers: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "nginx",
                            "image": image,
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                        },
                        *containers,
                    ]
                },
            },
        },
    }


def live_from(config: dict[str, Any]) -> dict[str, Any]:
    """What the server holds after a client-side apply of `config`: the
    annotation, server defaults and status."""
    live = copy.deepcopy(config)
    live["metadata"].update(
        {"uid": "u1", "resourceVersion": "5", "creationTimestamp": "2026-01-01T00:00:00Z"}
    )
    live["metadata"]["annotations"] = {LAST: json.dumps(config, separators=(",", ":"))}
    for c in live["spec"]["template"]["spec"]["containers"]:
        c["terminationMessagePath"] = "/dev/termination-log"
        c["imagePullPolicy"] = "IfNotPresent"
    live["spec"]["strategy"] = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
    }
    live["status"] = {"replicas": config["spec"]["replicas"], "readyReplicas": 1}
    return server_side_apply.record_update(None, live, "kubectl-client-side-apply")


@pytest.fixture
def stub() -> Iterator[Stub]:
    old = manifest("nginx:1.19", 2, [{"name": "sidecar", "image": "busybox"}])
    with running({PATH: live_from(old)}) as s:
        yield s


def kubectl(
    stub: Stub, tmp_path: Path, *args: str, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    cmd = [
        str(NEWEST),
        f"--server={stub.url}",
        f"--cache-dir={tmp_path / 'cache'}",
        "--namespace=default",
        *args,
    ]
    full_env = {
        **os.environ,
        "KUBECONFIG": str(tmp_path / "none"),
        "HOME": str(tmp_path),
        **GO_ENV,
        **(env or {}),
    }
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=full_env)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def containers(stub: Stub) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = stub.objects[PATH]["spec"]["template"]["spec"]["containers"]
    return result


def test_apply_changes_image_replicas_removes_a_container_and_an_env_var(
    stub: Stub, tmp_path: Path
) -> None:
    new = manifest("nginx:1.21", 5, [{"name": "extra", "image": "redis"}])
    new["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]
    (tmp_path / "web.yaml").write_text(yaml.safe_dump(new))
    kubectl(stub, tmp_path, "apply", "-f", str(tmp_path / "web.yaml"))
    ctype, patch = stub.patches[-1]
    assert ctype == "application/strategic-merge-patch+json"
    spec = patch["spec"]["template"]["spec"]
    assert "$setElementOrder/containers" in spec  # kubectl knew the merge key
    assert {"$patch": "delete", "name": "sidecar"} in spec["containers"]
    live = stub.objects[PATH]
    assert live["spec"]["replicas"] == 5
    assert [c["name"] for c in containers(stub)] == ["nginx", "extra"]
    nginx = containers(stub)[0]
    assert nginx["image"] == "nginx:1.21" and nginx["env"] == [{"name": "A", "value": "1"}]
    assert nginx["terminationMessagePath"] == "/dev/termination-log"  # server fields kept
    assert live["status"]["readyReplicas"] == 1
    assert json.loads(live["metadata"]["annotations"][LAST])["spec"]["replicas"] == 5


def test_apply_server_side_conflicts_then_force(stub: Stub, tmp_path: Path) -> None:
    # The live replicas differ from the last-applied configuration (changed
    # since, with the client-side manager's ownership kept), so kube-apiserver's
    # lastAppliedManager does not let `kubectl apply --server-side` take them.
    stub.objects[PATH]["spec"]["replicas"] = 3
    new = manifest("nginx:1.19", 7, [{"name": "sidecar", "image": "busybox"}])
    (tmp_path / "web.yaml").write_text(yaml.safe_dump(new))
    done = kubectl(
        stub, tmp_path, "apply", "--server-side", "-f", str(tmp_path / "web.yaml"), check=False
    )
    assert done.returncode != 0
    assert 'conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas' in done.stderr
    assert stub.patches[-1][0] == "application/apply-patch+yaml"
    kubectl(
        stub,
        tmp_path,
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        str(tmp_path / "web.yaml"),
    )
    live = stub.objects[PATH]
    assert live["spec"]["replicas"] == 7
    managers = {e["manager"]: e for e in live["metadata"]["managedFields"]}
    assert managers["kubectl"]["operation"] == "Apply"
    assert "f:replicas" in managers["kubectl"]["fieldsV1"]["f:spec"]
    # kubectl >= 1.26 then moves the client-side-apply manager's fields to its
    # own apply manager with a JSON patch of managedFields (csaupgrade).
    csa = managers.get("kubectl-client-side-apply")
    assert csa is None or "f:replicas" not in csa["fieldsV1"]["f:spec"]


def test_apply_server_side_takes_over_what_client_side_apply_last_applied(
    stub: Stub, tmp_path: Path
) -> None:
    """The upgrade path from client-side apply: fields the live object still
    holds as last applied move to the server-side manager without a conflict."""
    new = manifest("nginx:1.19", 7, [{"name": "sidecar", "image": "busybox"}])
    (tmp_path / "web.yaml").write_text(yaml.safe_dump(new))
    kubectl(stub, tmp_path, "apply", "--server-side", "-f", str(tmp_path / "web.yaml"))
    live = stub.objects[PATH]
    assert live["spec"]["replicas"] == 7
    assert json.loads(live["metadata"]["annotations"][LAST])["spec"]["replicas"] == 7


def test_patch_of_each_type(stub: Stub, tmp_path: Path) -> None:
    kubectl(
        stub,
        tmp_path,
        "patch",
        "deployment",
        "web",
        "-p",
        '{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:2"}]}}}}',
    )
    assert stub.patches[-1][0] == "application/strategic-merge-patch+json"
    assert [c["image"] for c in containers(stub)] == ["nginx:2", "busybox"]
    kubectl(
        stub,
        tmp_path,
        "patch",
        "deployment",
        "web",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/replicas","value":4},{"op":"remove","path":"/spec/template/spec/containers/1"}]',
    )
    assert stub.objects[PATH]["spec"]["replicas"] == 4 and len(containers(stub)) == 1
    kubectl(
        stub,
        tmp_path,
        "patch",
        "deployment",
        "web",
        "--type=merge",
        "-p",
        '{"metadata":{"labels":{"tier":"web"}}}',
    )
    assert stub.objects[PATH]["metadata"]["labels"] == {"tier": "web"}
    done = kubectl(
        stub,
        tmp_path,
        "patch",
        "deployment",
        "web",
        "--type=json",
        "-p",
        '[{"op":"test","path":"/spec/replicas","value":9}]',
        check=False,
    )
    assert done.returncode != 0 and "operation 0" in done.stderr


def test_edit_sends_a_strategic_merge_patch(stub: Stub, tmp_path: Path) -> None:
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/nginx:1.19/nginx:edited/' \"$1\"\n")
    editor.chmod(0o755)
    kubectl(stub, tmp_path, "edit", "deployment", "web", env={"KUBE_EDITOR": str(editor)})
    assert stub.patches[-1][0] == "application/strategic-merge-patch+json"
    assert [c["image"] for c in containers(stub)] == ["nginx:edited", "busybox"]


def test_explain_reads_the_openapi_v3_documents(stub: Stub, tmp_path: Path) -> None:
    out = kubectl(stub, tmp_path, "explain", "deployments.spec.template.spec.containers.env").stdout
    assert "FIELD: env <[]EnvVar>" in out and "valueFrom" in out
    out = kubectl(stub, tmp_path, "explain", "pods.spec", "--recursive").stdout
    assert "containers" in out and "tolerations" in out


def test_get_prints_the_table_columns(stub: Stub, tmp_path: Path) -> None:
    out = kubectl(stub, tmp_path, "get", "deployment", "web").stdout.splitlines()
    assert out[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert out[1].split()[:2] == ["web", "1/2"]
    wide = kubectl(stub, tmp_path, "get", "deployment", "web", "-o", "wide").stdout.splitlines()
    assert wide[0].split()[-3:] == ["CONTAINERS", "IMAGES", "SELECTOR"]


def test_custom_kind_explain_and_printer_columns(tmp_path: Path) -> None:
    from controlplane.api import crd
    from tests.fakes.crds import widget_crd

    crd.register(widget_crd())
    try:
        obj = {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {
                "name": "w",
                "namespace": "default",
                "creationTimestamp": "2026-01-01T00:00:00Z",
            },
            "spec": {"size": 4},
        }
        with running({"/apis/example.com/v1/namespaces/default/widgets/w": obj}) as stub:
            out = kubectl(stub, tmp_path, "explain", "widgets.spec").stdout
            assert "size" in out and "<integer>" in out
            lines = kubectl(stub, tmp_path, "get", "widget", "w").stdout.splitlines()
            assert lines[0].split() == ["NAME", "SIZE", "AGE"] and lines[1].split()[:2] == [
                "w",
                "4",
            ]
    finally:
        crd.unregister("widgets.example.com")


def test_client_side_validation_and_explain_from_the_v2_protobuf(tmp_path: Path) -> None:
    # An older server: no OpenAPI v3, no fieldValidation. kubectl downloads
    # /openapi/v2 as protobuf and validates manifests itself.
    examples = Path(__file__).resolve().parents[4] / "examples"
    with running({}, modern=False) as stub:
        for path in sorted(examples.glob("*.yaml")):
            kubectl(stub, tmp_path, "create", "--dry-run=client", "-o", "name", "-f", str(path))
        bad = tmp_path / "bad.yaml"
        bad.write_text(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n"
            "  - name: a\n    imagee: b\n    ports:\n    - containerPort: '80'\n"
        )
        done = kubectl(stub, tmp_path, "create", "--dry-run=client", "-f", str(bad), check=False)
        assert done.returncode != 0
        assert 'unknown field "imagee"' in done.stderr
        out = kubectl(
            stub, tmp_path, "explain", "pods.spec.containers", "--output=plaintext-openapiv2"
        ).stdout
        assert "imagePullPolicy" in out and "RESOURCE: containers <[]Object>" in out
