"""ControllerRevision (apps/v1) and the history DaemonSets and StatefulSets
keep, through kubectl 1.33 (by path) and the official Python client against
a real control plane (API server, scheduler, controllers): the kind's
columns and rules, `kubectl rollout history|undo ds|sts` (kubectl finds
the revisions by the owner's selector and controller reference, as its
DaemonSetHistoryViewer does), revision numbers, revisionHistoryLimit
pruning, and a StatefulSet's partitioned rolling update from revisions.

No agent runs: a pod is made Running and Ready by writing its status, as
an agent would."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

from tests.harness.kubectl import NEWEST
from tests.harness.wait import wait_for
from tests.integration.rest.conftest import Cluster

KUBECTL = NEWEST

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not KUBECTL.exists(), reason="kubectl 1.33 is not installed"),
]


def kubectl(cluster: Cluster, *args: str, stdin: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:  # fmt: skip
    done = subprocess.run(
        [str(KUBECTL), *args], input=stdin, capture_output=True, text=True, timeout=60,
        env=cluster.env(),
    )  # fmt: skip
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {done.returncode}\n{done.stderr}")
    return done


def get(cluster: Cluster, *what: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(kubectl(cluster, "get", *what, "-o", "json").stdout)
    return found


@pytest.fixture
def ns(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    name = request.node.name.replace("_", "-")[:50].strip("-")
    kubectl(cluster, "create", "namespace", name)
    try:
        yield name
    finally:
        kubectl(cluster, "delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def node(cluster: Cluster, ns: str) -> Iterator[str]:
    name = f"n-{ns[-40:]}".strip("-")
    kubectl(cluster, "create", "-f", "-", stdin=NODE.format(name=name))
    try:
        yield name
    finally:
        kubectl(cluster, "delete", "node", name, "--wait=false", check=False)


NODE = """
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}, revisions: test}}}}
"""

DS = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent, namespace: {ns}}}
spec:
  selector: {{matchLabels: {{app: agent}}}}
  revisionHistoryLimit: {limit}
  template:
    metadata: {{labels: {{app: agent}}}}
    spec:
      nodeSelector: {{revisions: test}}
      terminationGracePeriodSeconds: 0
      containers: [{{name: c, image: "busybox:1"}}]
"""


def revisions(cluster: Cluster, ns: str) -> dict[int, dict[str, Any]]:
    items = get(cluster, "controllerrevisions", "-n", ns)["items"]
    return {int(r["revision"]): r for r in items}


def numbered(cluster: Cluster, ns: str, number: int) -> dict[str, Any]:
    return revisions(cluster, ns).get(number) or {}


def live_pods(cluster: Cluster, ns: str, label: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = get(cluster, "pods", "-n", ns, "-l", label)["items"]
    return [p for p in found if not p["metadata"].get("deletionTimestamp")]


def make_ready(cluster: Cluster, ns: str, name: str) -> None:
    status = {"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]}}  # fmt: skip
    kubectl(cluster, "patch", "pod", name, "-n", ns, "--subresource=status", "--type=merge",
            "-p", json.dumps(status))  # fmt: skip


def history_rows(cluster: Cluster, what: str, ns: str) -> list[list[str]]:
    out = kubectl(cluster, "rollout", "history", what, "-n", ns).stdout.splitlines()
    start = next(i for i, line in enumerate(out) if line.startswith("REVISION"))
    assert out[start].split() == ["REVISION", "CHANGE-CAUSE"]
    return [line.split() for line in out[start + 1 :] if line.strip()]


def test_controllerrevision_kind(cluster: Cluster, ns: str, api: Any) -> None:
    manifest = f"""
apiVersion: apps/v1
kind: ControllerRevision
metadata: {{name: snap, namespace: {ns}}}
data: {{spec: {{template: {{metadata: {{labels: {{a: b}}}}}}}}}}
revision: 4
"""
    assert kubectl(cluster, "create", "-f", "-", stdin=manifest).stdout.strip() == (
        "controllerrevision.apps/snap created"
    )
    table = kubectl(cluster, "get", "controllerrevisions", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "CONTROLLER", "REVISION", "AGE"]
    assert table[1].split()[:3] == ["snap", "<none>", "4"]
    kubernetes = pytest.importorskip("kubernetes")
    apps = kubernetes.client.AppsV1Api(api)
    got = apps.read_namespaced_controller_revision("snap", ns)
    assert got.revision == 4 and got.data == {
        "spec": {"template": {"metadata": {"labels": {"a": "b"}}}}
    }
    apps.patch_namespaced_controller_revision("snap", ns, {"revision": 5})
    assert get(cluster, "controllerrevision", "snap", "-n", ns)["revision"] == 5
    changed = kubectl(cluster, "patch", "controllerrevision", "snap", "-n", ns, "--type=merge",
                      "-p", '{"data": {"x": 1}}', check=False)  # fmt: skip
    assert changed.returncode != 0
    assert "data: Invalid value" in changed.stderr and "field is immutable" in changed.stderr
    bad = manifest.replace("name: snap", "name: bad").replace("revision: 4", "revision: -1")
    bad = bad.replace("data: {spec: {template: {metadata: {labels: {a: b}}}}}\n", "")
    refused = kubectl(cluster, "create", "-f", "-", stdin=bad, check=False)
    assert refused.returncode != 0
    assert "data: Required value: data is mandatory" in refused.stderr
    assert "revision: Invalid value: -1: must be greater than or equal to 0" in refused.stderr


@pytest.fixture(scope="module", autouse=True)
def controllers_running(cluster: Cluster) -> None:
    """The controller manager is up (it starts after the API server, and on
    a loaded machine takes a while to win its lease): the default
    namespace's ServiceAccount is its first work."""
    wait_for(
        lambda: kubectl(cluster, "get", "serviceaccount", "default", check=False).returncode == 0,
        120, interval=0.5, message="the controller manager",
    )  # fmt: skip


@pytest.fixture
def api(cluster: Cluster) -> Iterator[Any]:
    kubernetes = pytest.importorskip("kubernetes")
    client = kubernetes.config.new_client_from_config(str(cluster.kubeconfig))
    try:
        yield client
    finally:
        client.close()


def test_daemonset_undo_to_revision_1(cluster: Cluster, ns: str, node: str) -> None:
    kubectl(cluster, "create", "-f", "-", stdin=DS.format(ns=ns, limit=10))
    first = wait_for(lambda: numbered(cluster, ns, 1), 30, message="revision 1")
    ds = get(cluster, "ds", "agent", "-n", ns)
    assert first["metadata"]["ownerReferences"] == [{
        "apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent",
        "uid": ds["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]  # fmt: skip
    hash1 = first["metadata"]["labels"]["controller-revision-hash"]
    assert first["metadata"]["name"] == f"agent-{hash1}"
    assert first["metadata"]["labels"]["app"] == "agent"
    assert first["data"]["spec"]["template"]["$patch"] == "replace"
    pod = wait_for(lambda: live_pods(cluster, ns, "app=agent"), 30, message="a daemon pod")[0]
    assert pod["metadata"]["labels"]["controller-revision-hash"] == hash1

    kubectl(cluster, "set", "image", "ds/agent", "-n", ns, "c=busybox:2")
    second = wait_for(lambda: numbered(cluster, ns, 2), 30, message="revision 2")
    hash2 = second["metadata"]["labels"]["controller-revision-hash"]
    assert hash2 != hash1
    wait_for(
        lambda: [p["metadata"]["labels"]["controller-revision-hash"]
                 for p in live_pods(cluster, ns, "app=agent")] == [hash2],
        30, message="the pod replaced from revision 2",
    )  # fmt: skip
    table = kubectl(cluster, "get", "controllerrevisions", "-n", ns).stdout.splitlines()
    assert sorted(r.split()[1:3] for r in table[1:]) == [["daemonset.apps/agent", "1"],
                                                           ["daemonset.apps/agent", "2"]]  # fmt: skip
    assert history_rows(cluster, "ds/agent", ns) == [["1", "<none>"], ["2", "<none>"]]
    shown = kubectl(cluster, "rollout", "history", "ds/agent", "-n", ns, "--revision=1").stdout
    assert "busybox:1" in shown and "busybox:2" not in shown

    undo = kubectl(cluster, "rollout", "undo", "ds/agent", "-n", ns, "--to-revision=1")
    assert undo.stdout.strip() == "daemonset.apps/agent rolled back"
    ds = get(cluster, "ds", "agent", "-n", ns)
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:1"
    # Revision 1's template is the current one again: the same revision, moved to 3.
    wait_for(lambda: sorted(revisions(cluster, ns)) == [2, 3], 30, message="renumbered")
    assert revisions(cluster, ns)[3]["metadata"]["name"] == f"agent-{hash1}"
    assert history_rows(cluster, "ds/agent", ns) == [["2", "<none>"], ["3", "<none>"]]
    wait_for(
        lambda: [p["metadata"]["labels"]["controller-revision-hash"]
                 for p in live_pods(cluster, ns, "app=agent")] == [hash1],
        30, message="the pod back on revision 1's template",
    )  # fmt: skip
    again = kubectl(cluster, "rollout", "undo", "ds/agent", "-n", ns, "--to-revision=7",
                    check=False)  # fmt: skip
    assert again.returncode != 0 and "unable to find specified revision 7" in again.stderr


def test_daemonset_history_limit(cluster: Cluster, ns: str, node: str) -> None:
    kubectl(cluster, "create", "-f", "-", stdin=DS.format(ns=ns, limit=1))
    wait_for(lambda: numbered(cluster, ns, 1), 30, message="revision 1")
    for number in (2, 3, 4):
        kubectl(cluster, "set", "image", "ds/agent", "-n", ns, f"c=busybox:{number}")
        wait_for(partial(numbered, cluster, ns, number), 30, message=f"revision {number}")
    # The current revision and one old one no pod uses are kept.
    wait_for(lambda: sorted(revisions(cluster, ns)) == [3, 4], 30, message="pruned to the limit")
    kubectl(cluster, "delete", "ds", "agent", "-n", ns)
    wait_for(lambda: not revisions(cluster, ns), 30, message="history collected with its owner")


STS = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: web, namespace: {ns}}}
spec:
  serviceName: web
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{{name: c, image: "busybox:1"}}]
"""


def sts_pods(cluster: Cluster, ns: str) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in live_pods(cluster, ns, "app=web")}


def ready_pods(cluster: Cluster, ns: str, count: int) -> dict[str, dict[str, Any]]:
    """Make the set's pods ready as they come until `count` are there and ready."""

    def step() -> dict[str, dict[str, Any]]:
        found = sts_pods(cluster, ns)
        for name, p in found.items():
            if p["status"].get("phase") != "Running":
                make_ready(cluster, ns, name)
        found = sts_pods(cluster, ns)
        ready = all(p["status"].get("phase") == "Running" for p in found.values())
        return found if len(found) == count and ready else {}

    result: dict[str, dict[str, Any]] = wait_for(step, 60, interval=0.2, message=f"{count} ready")
    return result


def image(pod: dict[str, Any]) -> str:
    return str(pod["spec"]["containers"][0]["image"])


def test_statefulset_partitioned_update_and_undo(cluster: Cluster, ns: str) -> None:
    kubectl(cluster, "create", "-f", "-", stdin=STS.format(ns=ns))
    ready_pods(cluster, ns, 2)
    rev1 = wait_for(lambda: numbered(cluster, ns, 1), 30, message="revision 1")
    name1 = rev1["metadata"]["name"]
    assert name1 == f"web-{rev1['metadata']['labels']['controller-revision-hash']}"
    status = wait_for(
        lambda: (st := get(cluster, "sts", "web", "-n", ns)["status"]).get("currentReplicas") == 2
        and st, 30, message="status on revision 1",
    )  # fmt: skip
    assert status["currentRevision"] == status["updateRevision"] == name1

    kubectl(cluster, "patch", "sts", "web", "-n", ns, "--type=merge", "-p",
            '{"spec": {"updateStrategy": {"rollingUpdate": {"partition": 1}}}}')  # fmt: skip
    kubectl(cluster, "set", "image", "sts/web", "-n", ns, "c=busybox:2")
    rev2 = wait_for(lambda: numbered(cluster, ns, 2), 30, message="revision 2")
    name2 = rev2["metadata"]["name"]
    wait_for(
        lambda: (p := sts_pods(cluster, ns).get("web-1"))
        and p["metadata"]["labels"]["controller-revision-hash"] == name2,
        30, message="web-1 updated",
    )  # fmt: skip
    pods = ready_pods(cluster, ns, 2)
    assert image(pods["web-1"]) == "busybox:2"
    assert image(pods["web-0"]) == "busybox:1"  # below the partition
    status = wait_for(
        lambda: (st := get(cluster, "sts", "web", "-n", ns)["status"]).get("updatedReplicas") == 1
        and st, 30, message="status of the partitioned update",
    )  # fmt: skip
    assert (status["currentRevision"], status["updateRevision"]) == (name1, name2)
    assert status["currentReplicas"] == 1

    # A pod below the partition is made again from the current revision.
    kubectl(cluster, "delete", "pod", "web-0", "-n", ns)
    wait_for(
        lambda: (p := sts_pods(cluster, ns).get("web-0"))
        and p["metadata"]["uid"] != pods["web-0"]["metadata"]["uid"],
        30, message="web-0 again",
    )  # fmt: skip
    again = sts_pods(cluster, ns)["web-0"]
    assert image(again) == "busybox:1"
    assert again["metadata"]["labels"]["controller-revision-hash"] == name1
    ready_pods(cluster, ns, 2)

    assert history_rows(cluster, "sts/web", ns) == [["1", "<none>"], ["2", "<none>"]]
    undo = kubectl(cluster, "rollout", "undo", "sts/web", "-n", ns, "--to-revision=1")
    assert undo.stdout.strip() == "statefulset.apps/web rolled back"
    wait_for(lambda: sorted(revisions(cluster, ns)) == [2, 3], 30, message="renumbered")
    assert revisions(cluster, ns)[3]["metadata"]["name"] == name1
    wait_for(
        lambda: (p := sts_pods(cluster, ns).get("web-1"))
        and p["metadata"]["labels"]["controller-revision-hash"] == name1,
        30, message="web-1 back on revision 1",
    )  # fmt: skip
    ready_pods(cluster, ns, 2)
    status = wait_for(
        lambda: (st := get(cluster, "sts", "web", "-n", ns)["status"]).get("currentReplicas") == 2
        and st, 30, message="rolled back",
    )  # fmt: skip
    assert status["currentRevision"] == status["updateRevision"] == name1
