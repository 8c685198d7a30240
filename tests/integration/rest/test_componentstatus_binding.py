"""ComponentStatus (`kubectl get cs`) and Binding as a top-level v1
resource, through kubectl 1.33 (by path) and the official Python client
against a real control plane (API server, scheduler, controllers)."""

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
            check: bool = True) -> subprocess.CompletedProcess[str]:  # fmt: skip
    done = subprocess.run([str(KUBECTL), *args], input=stdin, capture_output=True, text=True,
                          timeout=60, env=cluster.env())  # fmt: skip
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {done.returncode}\n{done.stderr}")
    return done


@pytest.fixture
def api(cluster: Cluster) -> Iterator[Any]:
    kubernetes = pytest.importorskip("kubernetes")
    client = kubernetes.config.new_client_from_config(str(cluster.kubeconfig))
    try:
        yield client
    finally:
        client.close()


def test_kubectl_get_cs(cluster: Cluster, api: Any) -> None:
    done = kubectl(cluster, "get", "cs")
    assert "Warning: v1 ComponentStatus is deprecated in v1.19+" in done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    assert rows == [
        ["NAME", "STATUS", "MESSAGE", "ERROR"],
        ["scheduler", "Healthy", "ok"],
        ["controller-manager", "Healthy", "ok"],
        ["etcd-0", "Healthy", "ok"],
    ]
    one = json.loads(kubectl(cluster, "get", "componentstatus", "etcd-0", "-o", "json").stdout)
    assert one["conditions"] == [{"type": "Healthy", "status": "True", "message": "ok"}]
    missing = kubectl(cluster, "get", "cs", "nope", check=False)
    assert 'componentstatuses "nope" not found' in missing.stderr
    # Read-only: get and list, nothing else.
    refused = kubectl(cluster, "delete", "cs", "etcd-0", check=False)
    assert refused.returncode != 0
    assert "(MethodNotAllowed)" in refused.stderr
    resources = kubectl(cluster, "api-resources", "-o", "wide").stdout.splitlines()
    cs = next(r.split() for r in resources if r.startswith("componentstatuses "))
    assert cs == ["componentstatuses", "cs", "v1", "false", "ComponentStatus", "get,list"]
    binding = next(r.split() for r in resources if r.startswith("bindings "))
    assert binding == ["bindings", "v1", "true", "Binding", "create"]
    kubernetes = pytest.importorskip("kubernetes")
    listed = kubernetes.client.CoreV1Api(api).list_component_status()
    assert [c.metadata.name for c in listed.items] == ["scheduler", "controller-manager",
                                                       "etcd-0"]  # fmt: skip


def test_post_bindings_binds_a_pod(cluster: Cluster, api: Any) -> None:
    ns = "bindings"
    kubectl(cluster, "create", "namespace", ns)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bind-node"}}
    kubectl(cluster, "create", "-f", "-", stdin=json.dumps(node))
    try:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": ns},
               "spec": {"schedulerName": "nobody", "containers": [
                   {"name": "c", "image": "busybox"}]}}  # fmt: skip
        kubectl(cluster, "create", "-f", "-", stdin=json.dumps(pod))
        binding = {"apiVersion": "v1", "kind": "Binding",
                   "metadata": {"name": "web", "namespace": ns},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": "bind-node"}}  # fmt: skip
        made = kubectl(cluster, "create", "-f", "-", stdin=json.dumps(binding))
        # kube-apiserver answers a Status (no name), which kubectl prints so.
        assert made.stdout.strip() == "status/<unknown> created"

        def node_of(name: str) -> Any:
            got = json.loads(kubectl(cluster, "get", "pod", name, "-n", ns, "-o", "json").stdout)
            return got["spec"].get("nodeName")

        assert node_of("web") == "bind-node"
        elsewhere = {**binding, "target": {"kind": "Node", "name": "other-node"}}
        again = kubectl(cluster, "create", "-f", "-", stdin=json.dumps(elsewhere), check=False)
        assert again.returncode != 0
        assert (
            'Error from server (Conflict): error when creating "STDIN": Operation cannot be '
            'fulfilled on pods/binding "web": pod web is already assigned to node "bind-node"'
        ) in again.stderr
        same = kubectl(cluster, "create", "-f", "-", stdin=json.dumps(binding), check=False)
        assert same.returncode != 0  # the same node too: a pod is bound once
        assert 'pod web is already assigned to node "bind-node"' in same.stderr
        # The Python client: the same resource (its Status answer read raw).
        kubernetes = pytest.importorskip("kubernetes")
        core = kubernetes.client.CoreV1Api(api)
        core.create_namespaced_pod(ns, {**pod, "metadata": {"name": "web2"}})
        answer = core.create_namespaced_binding(
            ns, {**binding, "metadata": {"name": "web2"}}, _preload_content=False
        )
        assert answer.status == 201
        assert json.loads(answer.data)["status"] == "Success"
        wait_for(lambda: node_of("web2") == "bind-node", 10, message="web2 bound")
        with pytest.raises(kubernetes.client.ApiException) as taken:
            core.create_namespaced_binding(
                ns, {**binding, "metadata": {"name": "web2"}}, _preload_content=False
            )
        assert taken.value.status == 409
        status = json.loads(taken.value.body)
        assert (status["reason"], status["code"]) == ("Conflict", 409)
        assert status["details"] == {"name": "web2", "kind": "pods/binding"}
        wrong = {**binding, "metadata": {"name": "web2"},
                 "target": {"kind": "Pod", "name": "x"}}  # fmt: skip
        with pytest.raises(kubernetes.client.ApiException) as err:
            core.create_namespaced_binding(ns, wrong, _preload_content=False)
        assert err.value.status == 422
        assert 'target.kind: Unsupported value: "Pod"' in json.loads(err.value.body)["message"]
    finally:
        kubectl(cluster, "delete", "node", "bind-node", check=False)
        kubectl(cluster, "delete", "namespace", ns, "--wait=false", check=False)
