"""Issue 29's quota and policy kinds through kubectl 1.33 (by path) and the
official Python client against a real control plane (API server, scheduler,
controllers): ResourceQuota (admission, the quota controller, describe,
`kubectl create quota`), LimitRange defaults and bounds, RuntimeClass
admission, ReplicationController with `kubectl scale`, PodDisruptionBudget
with the disruption controller, the eviction subresource and `kubectl drain`.

No agent runs: a pod is made Running and Ready by writing its status, as
an agent would."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
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
            check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:  # fmt: skip
    done = subprocess.run(
        [str(KUBECTL), *args], input=stdin, capture_output=True, text=True, timeout=timeout,
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
def api(cluster: Cluster) -> Iterator[Any]:
    kubernetes = pytest.importorskip("kubernetes")
    client = kubernetes.config.new_client_from_config(str(cluster.kubeconfig))
    try:
        yield client
    finally:
        client.close()


def pod_yaml(name: str, ns: str, extra: str = "", resources: str = "") -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {ns}, labels: {{app: web}}}}
spec:
  {extra}
  containers:
  - name: c
    image: busybox
    {resources}
"""


def used(cluster: Cluster, ns: str, name: str = "q") -> dict[str, str]:
    found: dict[str, str] = (get(cluster, "quota", name, "-n", ns).get("status") or {}).get(
        "used"
    ) or {}
    return found


# ---- ResourceQuota ------------------------------------------------------------------


def test_quota_refuses_past_hard_and_keeps_used_true(cluster: Cluster, ns: str, api: Any) -> None:
    made = kubectl(cluster, "create", "quota", "q", "-n", ns,
                   "--hard=pods=1,count/configmaps=3,requests.cpu=1,services.nodeports=1")  # fmt: skip
    assert made.stdout.strip() == "resourcequota/q created"
    # The namespace's kube-root-ca.crt is published on its own schedule: the
    # controller may first count no ConfigMap and the next sync one, as in
    # Kubernetes, so the test waits for the status that counts it.
    expected = {"pods": "0", "count/configmaps": "1", "requests.cpu": "0",
                "services.nodeports": "0"}  # fmt: skip
    wait_for(lambda: used(cluster, ns) == expected, 30, message="the quota controller's status")
    table = kubectl(cluster, "get", "quota", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "AGE", "REQUEST", "LIMIT"]
    assert (
        "count/configmaps: 1/3, pods: 0/1, requests.cpu: 0/1, services.nodeports: 0/1" in (table[1])
    )
    # A pod must request what the quota limits; then one fits, the second does not.
    bare = kubectl(cluster, "create", "-f", "-", stdin=pod_yaml("bare", ns), check=False)
    assert bare.returncode != 0
    assert ('pods "bare" is forbidden: failed quota: q: must specify requests.cpu for: c'
            in bare.stderr)  # fmt: skip
    res = "resources: {requests: {cpu: 500m}}"
    kubectl(cluster, "create", "-f", "-", stdin=pod_yaml("a", ns, resources=res))
    refused = kubectl(cluster, "create", "-f", "-", stdin=pod_yaml("b", ns, resources=res),
                      check=False)  # fmt: skip
    assert refused.returncode != 0
    assert ('Error from server (Forbidden): error when creating "STDIN": pods "b" is forbidden: '
            "exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1"
            in refused.stderr)  # fmt: skip
    assert kubectl(cluster, "get", "pod", "b", "-n", ns, check=False).returncode != 0
    assert used(cluster, ns)["pods"] == "1"
    assert used(cluster, ns)["requests.cpu"] == "500m"
    # kubectl describe, as kubectl prints it.
    described = kubectl(cluster, "describe", "quota", "q", "-n", ns).stdout
    lines = [line.split() for line in described.splitlines()]
    assert ["Resource", "Used", "Hard"] in lines
    assert ["pods", "1", "1"] in lines
    assert ["requests.cpu", "500m", "1"] in lines
    # The Python client: the refusal as a 403 Status.
    kubernetes = pytest.importorskip("kubernetes")
    core = kubernetes.client.CoreV1Api(api)
    with pytest.raises(kubernetes.client.ApiException) as err:
        core.create_namespaced_pod(
            ns,
            {
                "metadata": {"name": "c"},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1m"}}}
                    ]
                },
            },
        )
    assert err.value.status == 403
    assert json.loads(err.value.body)["reason"] == "Forbidden"
    # A NodePort service uses services.nodeports.
    svc = kubectl(cluster, "create", "service", "nodeport", "np", "--tcp=80:80", "-n", ns,
                  "--dry-run=server")  # fmt: skip
    assert "created (server dry run)" in svc.stdout
    assert used(cluster, ns)["services.nodeports"] == "0"  # a dry run is never charged
    # Deleting the pod gives its share back (the controller recounts).
    kubectl(cluster, "delete", "pod", "a", "-n", ns, "--grace-period=0", "--force")
    wait_for(lambda: used(cluster, ns)["pods"] == "0", 30, message="pods used back to 0")
    assert used(cluster, ns)["requests.cpu"] == "0"
    # Patch, watch and list through the Python client.
    core.patch_namespaced_resource_quota("q", ns, {"spec": {"hard": {"pods": "5"}}})
    w = kubernetes.watch.Watch()
    for event in w.stream(core.list_namespaced_resource_quota, ns, timeout_seconds=10):
        if (event["object"].status.hard or {}).get("pods") == "5":
            w.stop()
            break
    else:
        raise AssertionError("the quota's status.hard never became pods=5")
    assert [q.metadata.name for q in core.list_namespaced_resource_quota(ns).items] == ["q"]
    kubectl(cluster, "delete", "quota", "q", "-n", ns)


def test_quota_scopes_and_validation(cluster: Cluster, ns: str) -> None:
    scoped = f"""
apiVersion: v1
kind: ResourceQuota
metadata: {{name: be, namespace: {ns}}}
spec:
  hard: {{pods: "1"}}
  scopes: [BestEffort]
"""
    kubectl(cluster, "create", "-f", "-", stdin=scoped)
    wait_for(
        lambda: used(cluster, ns, "be").get("pods") == "0", 30, message="the scoped quota counted"
    )
    guaranteed = "resources: {requests: {cpu: 10m}, limits: {cpu: 10m}}"
    for name in ("g1", "g2"):  # not BestEffort: not counted
        kubectl(cluster, "create", "-f", "-", stdin=pod_yaml(name, ns, resources=guaranteed))
    kubectl(cluster, "create", "-f", "-", stdin=pod_yaml("be1", ns))
    refused = kubectl(cluster, "create", "-f", "-", stdin=pod_yaml("be2", ns), check=False)
    assert "exceeded quota: be, requested: pods=1, used: pods=1, limited: pods=1" in (
        refused.stderr
    )
    bad = scoped.replace("name: be", "name: bad").replace('{pods: "1"}', '{configmaps: "-1"}')
    invalid = kubectl(cluster, "create", "-f", "-", stdin=bad, check=False)
    assert invalid.returncode != 0
    assert 'spec.hard[configmaps]: Invalid value: "-1": must be greater than or equal to 0' in (
        invalid.stderr
    )
    assert (
        'spec.hard[configmaps]: Invalid value: "configmaps": unsupported scope applied to '
        "resource" in invalid.stderr
    )
    assert kubectl(cluster, "get", "quota", "bad", "-n", ns, check=False).returncode != 0


# ---- LimitRange ---------------------------------------------------------------------


def test_limit_range_defaults_and_bounds(cluster: Cluster, ns: str) -> None:
    lr = f"""
apiVersion: v1
kind: LimitRange
metadata: {{name: lr, namespace: {ns}}}
spec:
  limits:
  - type: Container
    max: {{memory: 512Mi}}
    min: {{memory: 16Mi}}
    defaultRequest: {{memory: 64Mi}}
"""
    kubectl(cluster, "create", "-f", "-", stdin=lr)
    stored = get(cluster, "limits", "lr", "-n", ns)["spec"]["limits"][0]
    assert stored["default"] == {"memory": "512Mi"}  # defaulted from max
    table = kubectl(cluster, "get", "limitranges", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "CREATED", "AT"]
    kubectl(cluster, "create", "-f", "-", stdin=pod_yaml("d", ns))
    pod = get(cluster, "pod", "d", "-n", ns)
    assert pod["spec"]["containers"][0]["resources"] == {
        "limits": {"memory": "512Mi"}, "requests": {"memory": "64Mi"}}  # fmt: skip
    assert pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: memory request for container c; memory limit for container c"
    )
    small = "resources: {requests: {memory: 8Mi}}"
    refused = kubectl(cluster, "create", "-f", "-", stdin=pod_yaml("s", ns, resources=small),
                      check=False)  # fmt: skip
    assert ('pods "s" is forbidden: minimum memory usage per Container is 16Mi, but request is '
            "8Mi" in refused.stderr)  # fmt: skip
    bad = lr.replace("min: {memory: 16Mi}", "min: {memory: 1Gi}").replace("name: lr", "name: x")
    invalid = kubectl(cluster, "create", "-f", "-", stdin=bad, check=False)
    assert ('spec.limits[0].min[memory]: Invalid value: "1Gi": min value 1Gi is greater than '
            "max value 512Mi" in invalid.stderr)  # fmt: skip


# ---- RuntimeClass -------------------------------------------------------------------


def test_runtime_class(cluster: Cluster, ns: str) -> None:
    unknown = kubectl(cluster, "create", "-f", "-", check=False,
                      stdin=pod_yaml("u", ns, "runtimeClassName: gvisor"))  # fmt: skip
    assert unknown.returncode != 0
    assert 'pods "u" is forbidden: pod rejected: RuntimeClass "gvisor" not found' in (
        unknown.stderr
    )
    rc = """
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
overhead: {podFixed: {memory: 32Mi}}
scheduling: {nodeSelector: {sandbox: gvisor}}
"""
    kubectl(cluster, "create", "-f", "-", stdin=rc)
    try:
        table = kubectl(cluster, "get", "runtimeclass").stdout.splitlines()
        assert table[0].split() == ["NAME", "HANDLER", "AGE"]
        assert table[1].split()[:2] == ["gvisor", "runsc"]
        kubectl(cluster, "create", "-f", "-", stdin=pod_yaml("u", ns, "runtimeClassName: gvisor"))
        spec = get(cluster, "pod", "u", "-n", ns)["spec"]
        assert spec["overhead"] == {"memory": "32Mi"}
        assert spec["nodeSelector"] == {"sandbox": "gvisor"}
        immutable = kubectl(cluster, "patch", "runtimeclass", "gvisor", "--type=merge",
                            "-p", '{"handler": "kata"}', check=False)  # fmt: skip
        assert 'handler: Invalid value: "kata": field is immutable' in immutable.stderr
    finally:
        kubectl(cluster, "delete", "runtimeclass", "gvisor", check=False)


# ---- ReplicationController, PodDisruptionBudget, eviction, drain ---------------------


def make_ready(cluster: Cluster, ns: str, name: str) -> None:
    status = {"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]}}  # fmt: skip
    kubectl(cluster, "patch", "pod", name, "-n", ns, "--subresource=status", "--type=merge",
            "-p", json.dumps(status))  # fmt: skip


def pods(cluster: Cluster, ns: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = get(cluster, "pods", "-n", ns, "-l", "app=web")["items"]
    return [p for p in found if not p["metadata"].get("deletionTimestamp")]


def ready_all(cluster: Cluster, ns: str, count: int) -> None:
    wait_for(lambda: len(pods(cluster, ns)) == count, 30, message=f"{count} pods")
    for p in pods(cluster, ns):
        if p["status"].get("phase") != "Running":
            make_ready(cluster, ns, p["metadata"]["name"])


def budget(cluster: Cluster, ns: str) -> dict[str, Any]:
    found: dict[str, Any] = get(cluster, "pdb", "web", "-n", ns).get("status") or {}
    return found


RC = """
apiVersion: v1
kind: ReplicationController
metadata: {{name: web, namespace: {ns}}}
spec:
  replicas: 2
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      nodeName: {node}
      terminationGracePeriodSeconds: 0
      containers: [{{name: c, image: busybox}}]
"""


def test_eviction_honours_the_budget(cluster: Cluster, ns: str, api: Any) -> None:
    # The pods' node exists: pod GC deletes pods bound to a node that does not,
    # and the ReplicationController's Pending replacements are evicted freely.
    node = f"evict-{ns[-20:]}".strip("-")
    kubectl(cluster, "create", "-f", "-", stdin=NODE.format(name=node))
    try:
        _eviction_honours_the_budget(cluster, ns, api, node)
    finally:
        kubectl(cluster, "delete", "node", node, check=False)


def _eviction_honours_the_budget(cluster: Cluster, ns: str, api: Any, node: str) -> None:
    kubectl(cluster, "create", "-f", "-", stdin=RC.format(ns=ns, node=node))
    rc = get(cluster, "rc", "web", "-n", ns)
    assert rc["spec"]["selector"] == {"app": "web"}  # defaulted from the template
    ready_all(cluster, ns, 2)
    wait_for(lambda: get(cluster, "rc", "web", "-n", ns)["status"].get("readyReplicas") == 2,
             30, message="the RC's status")  # fmt: skip
    table = kubectl(cluster, "get", "rc", "-n", ns, "-o", "wide").stdout.splitlines()
    assert table[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS",
                                "IMAGES", "SELECTOR"]  # fmt: skip
    assert table[1].split()[:4] == ["web", "2", "2", "2"]
    made = kubectl(cluster, "create", "pdb", "web", "-n", ns, "--selector=app=web",
                   "--min-available=2")  # fmt: skip
    assert made.stdout.strip() == "poddisruptionbudget.policy/web created"
    wait_for(
        lambda: budget(cluster, ns).get("currentHealthy") == 2, 30, message="the budget's status"
    )
    st = budget(cluster, ns)
    assert (st["desiredHealthy"], st["expectedPods"], st["disruptionsAllowed"]) == (2, 2, 0)
    assert st["conditions"][0]["type"] == "DisruptionAllowed"
    assert st["conditions"][0]["reason"] == "InsufficientPods"
    table = kubectl(cluster, "get", "pdb", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED",
                                "DISRUPTIONS", "AGE"]  # fmt: skip
    assert table[1].split()[:4] == ["web", "2", "N/A", "0"]

    kubernetes = pytest.importorskip("kubernetes")
    core = kubernetes.client.CoreV1Api(api)
    victim = pods(cluster, ns)[0]["metadata"]["name"]
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": victim, "namespace": ns}}  # fmt: skip
    with pytest.raises(kubernetes.client.ApiException) as err:
        core.create_namespaced_pod_eviction(victim, ns, eviction)
    assert err.value.status == 429
    body = json.loads(err.value.body)
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert body["details"]["causes"] == [{"reason": "DisruptionBudget", "message":
        "The disruption budget web needs 2 healthy pods and has 2 currently"}]  # fmt: skip
    assert get(cluster, "pod", victim, "-n", ns)["metadata"].get("deletionTimestamp") is None

    scaled = kubectl(cluster, "scale", "rc", "web", "-n", ns, "--replicas=3")
    assert scaled.stdout.strip() == "replicationcontroller/web scaled"
    ready_all(cluster, ns, 3)
    wait_for(
        lambda: budget(cluster, ns).get("disruptionsAllowed") == 1, 30, message="one disruption"
    )
    core.create_namespaced_pod_eviction(victim, ns, eviction)
    wait_for(lambda: all(p["metadata"]["name"] != victim for p in pods(cluster, ns)), 30,
             message="the evicted pod gone")  # fmt: skip
    st = budget(cluster, ns)
    assert st["disruptionsAllowed"] == 0


NODE = """
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}
"""


def test_drain_respects_budgets(cluster: Cluster, ns: str) -> None:
    node = f"drain-{ns[-20:]}".strip("-")
    kubectl(cluster, "create", "-f", "-", stdin=NODE.format(name=node))
    try:
        kubectl(cluster, "create", "-f", "-", stdin=RC.format(ns=ns, node=node))
        ready_all(cluster, ns, 2)
        kubectl(cluster, "create", "pdb", "web", "-n", ns, "--selector=app=web",
                "--max-unavailable=1")  # fmt: skip
        wait_for(
            lambda: budget(cluster, ns).get("disruptionsAllowed") == 1, 30, message="one allowed"
        )
        assert budget(cluster, ns)["expectedPods"] == 2  # the RC's scale
        drained = kubectl(cluster, "drain", node, "--pod-selector=app=web", "--timeout=8s",
                          "--grace-period=0", check=False, timeout=60)  # fmt: skip
        assert drained.returncode != 0
        assert "Cannot evict pod as it would violate the pod's disruption budget." in (
            drained.stderr
        )
        assert get(cluster, "node", node)["spec"].get("unschedulable") is True
        # --disable-eviction deletes, budgets or not.
        forced = kubectl(cluster, "drain", node, "--pod-selector=app=web", "--timeout=30s",
                         "--grace-period=0", "--disable-eviction", timeout=60)  # fmt: skip
        assert "drained" in forced.stdout
    finally:
        kubectl(cluster, "delete", "rc", "web", "-n", ns, check=False)
        kubectl(cluster, "delete", "node", node, check=False)


def test_budget_validation(cluster: Cluster, ns: str) -> None:
    bad = f"""
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: bad, namespace: {ns}}}
spec: {{minAvailable: 1, maxUnavailable: "150%", selector: {{matchLabels: {{app: web}}}}}}
"""
    refused = kubectl(cluster, "create", "-f", "-", stdin=bad, check=False)
    assert refused.returncode != 0
    assert "spec: Invalid value: minAvailable and maxUnavailable cannot be both set" in (
        refused.stderr
    )
    assert 'spec.maxUnavailable: Invalid value: "150%": must not be greater than 100%' in (
        refused.stderr
    )
    assert kubectl(cluster, "get", "pdb", "bad", "-n", ns, check=False).returncode != 0
