"""kubectl inside a pod with its ServiceAccount token, on a real `skiff up` (issue 16).

The host's kubectl (statically linked) is copied at run time into a test
image (busybox plus /usr/local/bin/kubectl; never committed), imported
offline into the instance's runtime. The pod runs `kubectl auth can-i list
pods`, the same in namespace "other", and `kubectl get pods` in a loop
with nothing but in-cluster configuration: KUBERNETES_SERVICE_HOST/PORT of
the `kubernetes` Service (through the node's service proxy to the API
server, whose certificate names the Service's address), the projected
token and ca.crt. Before a RoleBinding the ServiceAccount may not list
pods; after one it may, in its namespace only.
"""

from __future__ import annotations

import shutil
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.images import TestImages
from tests.harness.images.tree import Tree
from tests.harness.kubectl import NEWEST
from tests.harness.nodeprocs import free_service_cidrs, short_tempdir
from tests.harness.skiff_up import Up, free_cluster_cidrs
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow]

KUBECTL = NEWEST  # by its path: /usr/bin/kubectl is a dispatcher
IMAGE = "docker.io/skiff-e2e/kubectl:1"
RBAC = "rbac.authorization.k8s.io"
SCRIPT = """
while true; do
  for q in default other get; do
    case $q in
      default) kubectl auth can-i list pods ;;
      other) kubectl auth can-i list pods -n other ;;
      get) kubectl get pods -o name ;;
    esac > /out/$q.tmp 2>&1
    mv /out/$q.tmp /out/$q
  done
  sleep 1
done
"""


def kubectl_archive(base: Path, images: TestImages) -> Path:
    tree = Tree().dir("usr/local/bin").file("usr/local/bin/kubectl", KUBECTL.resolve(), 0o755)
    layout = images.layout(base / "layout", {IMAGE: images.custom("kubectl", [tree])})
    archive = base / "kubectl.tar"
    with tarfile.open(archive, "w") as tf:
        for entry in sorted(layout.rglob("*")):
            tf.add(entry, arcname=str(entry.relative_to(layout)), recursive=False)
    return archive


@pytest.fixture
def up(images: TestImages) -> Iterator[Up]:
    if not KUBECTL.exists():
        pytest.skip("kubectl is not installed")
    base = short_tempdir("skkc-")
    instance = Up("kc", base / "kc", free_cluster_cidrs(1)[0], free_service_cidrs(1)[0])
    try:
        instance.data_dir.mkdir()
        instance.import_image(kubectl_archive(base, images))
        registries = base / "registries.yaml"
        registries.write_text("mirrors: {}\ndisable_default_endpoint: true\n")
        instance.start(registries)
        yield instance
    except BaseException:
        sys.stderr.write(instance.log_tail() + "\n")
        raise
    finally:
        try:
            instance.cleanup()
        finally:
            shutil.rmtree(base, ignore_errors=True)


def kubectl_pod(out: Path) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "kubectl", "namespace": "default"},
        "spec": {
            "containers": [{
                "name": "k", "image": IMAGE, "command": ["sh", "-c", SCRIPT],
                "env": [{"name": "HOME", "value": "/tmp"}],
                "volumeMounts": [{"name": "out", "mountPath": "/out"}],
            }],
            "volumes": [{"name": "out", "hostPath": {"path": str(out)}}],
        },
    }  # fmt: skip


def test_kubectl_in_a_pod_is_allowed_only_what_its_service_account_is_bound_to(up: Up) -> None:
    api = up.wait_ready()
    out = up.data_dir.parent / "out"
    out.mkdir()
    api.create("Pod", kubectl_pod(out), "default")

    def answer(name: str) -> str:
        try:
            return (out / name).read_text().strip()
        except FileNotFoundError:
            return ""

    # Before any binding: denied, in its namespace and elsewhere.
    wait_for(lambda: answer("get") != "", timeout=120, message="kubectl ran in the pod")
    assert answer("default").startswith("no"), answer("default")
    assert answer("other").startswith("no"), answer("other")
    assert "forbidden" in answer("get").lower(), answer("get")
    assert "system:serviceaccount:default:default" in answer("get")

    api.create("Role", {
        "apiVersion": f"{RBAC}/v1", "kind": "Role",
        "metadata": {"name": "pod-reader", "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
    }, "default")  # fmt: skip
    api.create("RoleBinding", {
        "apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
        "metadata": {"name": "default-reads-pods", "namespace": "default"},
        "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "pod-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}],
    }, "default")  # fmt: skip

    wait_for(lambda: answer("default") == "yes", timeout=30, message="can-i says yes")
    wait_for(lambda: "pod/kubectl" in answer("get"), timeout=30, message="get pods lists it")
    # The binding is in default: another namespace stays closed.
    assert answer("other").startswith("no"), answer("other")
