"""EndpointSlices (discovery.k8s.io/v1) through kubectl 1.33 (by path) and
the official Python client against a real control plane (API server,
scheduler, controllers): the EndpointSlice controller following pods
through readiness and termination, slicing at 100 endpoints, the mirroring
of custom Endpoints, validation and the columns of `kubectl get
endpointslices`. Endpoints stay maintained beside them.

No agent runs: a pod is bound to a Node object the test makes (the node
IPAM controller gives it a pod CIDR) and made Running and Ready by writing
its status, as an agent would."""

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
SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"

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


def slices(cluster: Cluster, ns: str, service: str) -> list[dict[str, Any]]:
    out = kubectl(cluster, "get", "endpointslices", "-n", ns, "-l", f"{SERVICE_NAME}={service}",
                  "-o", "json").stdout  # fmt: skip
    found: list[dict[str, Any]] = json.loads(out)["items"]
    return found


def endpoints_of(cluster: Cluster, ns: str, service: str) -> dict[str, dict[str, Any]]:
    """Every endpoint of a Service's slices, by pod name."""
    return {
        e["targetRef"]["name"]: e
        for s in slices(cluster, ns, service)
        for e in s.get("endpoints") or []
    }


@pytest.fixture
def ns(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    name = request.node.name.replace("_", "-")[:50].strip("-")
    kubectl(cluster, "create", "namespace", name)
    try:
        yield name
    finally:
        kubectl(cluster, "delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def node(cluster: Cluster, ns: str) -> Iterator[tuple[str, str]]:
    """A Node in zone-a with the pod CIDR the node IPAM controller gave it:
    (name, the prefix of its pod IPs)."""
    name = f"n-{ns[-30:]}".strip("-")
    manifest = {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "labels": {"topology.kubernetes.io/zone": "zone-a"}}}  # fmt: skip
    kubectl(cluster, "create", "-f", "-", stdin=json.dumps(manifest))
    try:
        cidr = wait_for(
            lambda: json.loads(kubectl(cluster, "get", "node", name, "-o", "json").stdout)[
                "spec"
            ].get("podCIDR"),
            30,
            message="the node's pod CIDR",
        )
        yield name, str(cidr).rsplit(".", 1)[0]
    finally:
        kubectl(cluster, "delete", "node", name, check=False)


def service(ns: str, name: str = "web") -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": name, "namespace": ns, "labels": {"tier": "front"}}, "spec": {
        "selector": {"app": name}, "ports": [{"name": "http", "port": 80,
                                              "targetPort": "web"}]}})  # fmt: skip


def run_pod(cluster: Cluster, api: Any, ns: str, name: str, node: str, ip: str,
            ready: bool, app: str = "web") -> None:  # fmt: skip
    """A pod bound to `node`, Running with `ip`, Ready or not (written as an agent would)."""
    kubernetes = pytest.importorskip("kubernetes")
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_pod(ns, {
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox", "ports": [
            {"name": "web", "containerPort": 8080}]}]}})  # fmt: skip
    set_ready(api, ns, name, ip, ready)


def set_ready(api: Any, ns: str, name: str, ip: str, ready: bool) -> None:
    kubernetes = pytest.importorskip("kubernetes")
    core = kubernetes.client.CoreV1Api(api)
    core.patch_namespaced_pod_status(name, ns, {"status": {
        "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}})  # fmt: skip


@pytest.fixture
def api(cluster: Cluster) -> Iterator[Any]:
    kubernetes = pytest.importorskip("kubernetes")
    client = kubernetes.config.new_client_from_config(str(cluster.kubeconfig))
    try:
        yield client
    finally:
        client.close()


def test_slices_follow_pods_through_readiness_and_termination(
    cluster: Cluster, ns: str, node: tuple[str, str], api: Any
) -> None:
    node_name, prefix = node
    kubectl(cluster, "create", "-f", "-", stdin=service(ns))
    # No pod yet: one placeholder slice, printed as Kubernetes prints it.
    wait_for(lambda: slices(cluster, ns, "web"), 30, message="the placeholder slice")
    table = kubectl(cluster, "get", "endpointslices", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    assert table[1].split()[0].startswith("web-")
    assert table[1].split()[1:4] == ["IPv4", "<unset>", "<unset>"]

    run_pod(cluster, api, ns, "a", node_name, f"{prefix}.10", ready=False)
    run_pod(cluster, api, ns, "b", node_name, f"{prefix}.11", ready=True)
    wait_for(lambda: len(endpoints_of(cluster, ns, "web")) == 2, 30, message="two endpoints")
    (slice_,) = slices(cluster, ns, "web")
    assert slice_["addressType"] == "IPv4"
    assert slice_["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    assert slice_["metadata"]["labels"] == {
        SERVICE_NAME: "web", MANAGED_BY: "endpointslice-controller.k8s.io", "tier": "front"}  # fmt: skip
    (ref,) = slice_["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["controller"]) == ("Service", "web", True)
    eps = endpoints_of(cluster, ns, "web")
    assert eps["a"]["conditions"] == {"ready": False, "serving": False, "terminating": False}
    assert eps["b"]["conditions"] == {"ready": True, "serving": True, "terminating": False}
    assert (eps["a"]["nodeName"], eps["a"]["zone"]) == (node_name, "zone-a")
    assert eps["a"]["addresses"] == [f"{prefix}.10"]
    row = kubectl(cluster, "get", "endpointslices", "-n", ns, "--no-headers").stdout.split()
    assert row[1:4] == ["IPv4", "8080", f"{prefix}.10,{prefix}.11"]

    # Readiness: a becomes ready; the Python client's watch sees the slice change.
    kubernetes = pytest.importorskip("kubernetes")
    discovery = kubernetes.client.DiscoveryV1Api(api)
    listed = discovery.list_namespaced_endpoint_slice(ns, label_selector=f"{SERVICE_NAME}=web")
    watch = kubernetes.watch.Watch()
    set_ready(api, ns, "a", f"{prefix}.10", True)
    for event in watch.stream(discovery.list_namespaced_endpoint_slice, ns,
                              resource_version=listed.metadata.resource_version,
                              timeout_seconds=30):  # fmt: skip
        conditions = {e.target_ref.name: e.conditions for e in event["object"].endpoints or []}
        if "a" in conditions and conditions["a"].ready:
            assert event["type"] == "MODIFIED"
            assert conditions["a"].serving and not conditions["a"].terminating
            watch.stop()
            break
    else:
        raise AssertionError("the watch never showed pod a ready")

    # Termination: a deleted pod (no agent finishes it) stays, terminating and
    # not ready but still serving; once gone, its endpoint goes.
    kubectl(cluster, "delete", "pod", "a", "-n", ns, "--wait=false")
    wait_for(lambda: endpoints_of(cluster, ns, "web")["a"]["conditions"]
             == {"ready": False, "serving": True, "terminating": True}, 30,
             message="a terminating")  # fmt: skip
    ep = json.loads(kubectl(cluster, "get", "endpoints", "web", "-n", ns, "-o", "json").stdout)
    assert [a["ip"] for a in ep["subsets"][0]["addresses"]] == [f"{prefix}.11"]  # still kept
    kubectl(cluster, "delete", "pod", "a", "-n", ns, "--grace-period=0", "--force")
    wait_for(lambda: set(endpoints_of(cluster, ns, "web")) == {"b"}, 30, message="a gone")

    # The Service's slices go with it.
    kubectl(cluster, "delete", "service", "web", "-n", ns)
    wait_for(lambda: not slices(cluster, ns, "web"), 30, message="the slices deleted")


def test_more_than_100_endpoints_are_sliced(
    cluster: Cluster, ns: str, node: tuple[str, str], api: Any
) -> None:
    node_name, prefix = node
    kubectl(cluster, "create", "-f", "-", stdin=service(ns))
    for i in range(105):
        run_pod(cluster, api, ns, f"p{i}", node_name, f"{prefix}.{i + 2}", ready=True)

    def sizes() -> list[int]:
        return sorted(len(s.get("endpoints") or []) for s in slices(cluster, ns, "web"))

    wait_for(lambda: sizes() == [5, 100], 60, message="slices of 100 and 5")
    row = kubectl(cluster, "get", "endpointslices", "-n", ns, "--no-headers").stdout
    assert "+ 97 more..." in row


def test_custom_endpoints_are_mirrored(cluster: Cluster, ns: str) -> None:
    made = json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": ns},
         "spec": {"ports": [{"port": 5432}]}},
        {"apiVersion": "v1", "kind": "Endpoints", "metadata": {
            "name": "db", "namespace": ns, "labels": {"team": "data"}}, "subsets": [{
                "addresses": [{"ip": "192.168.7.10"}], "notReadyAddresses": [{"ip": "192.168.7.11"}],
                "ports": [{"name": "pg", "port": 5432}]}]}]})  # fmt: skip
    kubectl(cluster, "create", "-f", "-", stdin=made)
    wait_for(lambda: slices(cluster, ns, "db"), 30, message="the mirrored slice")
    (slice_,) = slices(cluster, ns, "db")
    assert slice_["metadata"]["labels"] == {
        SERVICE_NAME: "db", MANAGED_BY: "endpointslicemirroring-controller.k8s.io", "team": "data"}  # fmt: skip
    (ref,) = slice_["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"]) == ("Endpoints", "db")
    assert slice_["ports"] == [{"name": "pg", "port": 5432, "protocol": "TCP"}]
    assert [(e["addresses"], e["conditions"]) for e in slice_["endpoints"]] == [
        (["192.168.7.10"], {"ready": True}), (["192.168.7.11"], {"ready": False})]  # fmt: skip
    # An Endpoints change is mirrored; skip-mirror removes the slices.
    kubectl(cluster, "patch", "endpoints", "db", "-n", ns, "--type=json", "-p",
            '[{"op": "remove", "path": "/subsets/0/notReadyAddresses"}]')  # fmt: skip
    wait_for(lambda: len(slices(cluster, ns, "db")[0]["endpoints"]) == 1, 30, message="mirrored")
    kubectl(cluster, "label", "endpoints", "db", "-n", ns,
            "endpointslice.kubernetes.io/skip-mirror=true")  # fmt: skip
    wait_for(lambda: not slices(cluster, ns, "db"), 30, message="the mirrored slice removed")


def test_slice_crud_and_validation(cluster: Cluster, ns: str, api: Any) -> None:
    manifest = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": "manual", "namespace": ns,
                             "labels": {SERVICE_NAME: "manual"}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.1.2.3"], "conditions": {"ready": True}}],
                "ports": [{"port": 9000}]}  # fmt: skip
    assert kubectl(cluster, "create", "-f", "-", stdin=json.dumps(manifest)).stdout.strip() == (
        "endpointslice.discovery.k8s.io/manual created"
    )
    got = json.loads(kubectl(cluster, "get", "endpointslice", "manual", "-n", ns,
                             "-o", "json").stdout)  # fmt: skip
    assert got["ports"] == [{"name": "", "port": 9000, "protocol": "TCP"}]  # defaulted
    kubectl(cluster, "patch", "endpointslice", "manual", "-n", ns, "--type=merge", "-p",
            '{"endpoints": [{"addresses": ["10.1.2.4"]}]}')  # fmt: skip
    row = kubectl(cluster, "get", "endpointslice", "manual", "-n", ns, "--no-headers").stdout
    assert row.split()[1:4] == ["IPv4", "9000", "10.1.2.4"]
    immutable = kubectl(cluster, "patch", "endpointslice", "manual", "-n", ns, "--type=merge",
                        "-p", '{"addressType": "IPv6", "endpoints": []}', check=False)  # fmt: skip
    assert immutable.returncode != 0
    assert 'addressType: Invalid value: "IPv6": field is immutable' in immutable.stderr
    bad = {**manifest, "metadata": {"name": "bad", "namespace": ns}, "addressType": "IPv5",
           "endpoints": [{"addresses": []}]}  # fmt: skip
    refused = kubectl(cluster, "create", "-f", "-", stdin=json.dumps(bad), check=False)
    assert refused.returncode != 0
    assert 'The EndpointSlice "bad" is invalid:' in refused.stderr
    assert "endpoints[0].addresses: Required value: must contain at least 1 address" in (
        refused.stderr
    )
    assert 'addressType: Unsupported value: "IPv5": supported values: "FQDN", "IPv4", "IPv6"' in (
        refused.stderr
    )
    kubernetes = pytest.importorskip("kubernetes")
    discovery = kubernetes.client.DiscoveryV1Api(api)
    with pytest.raises(kubernetes.client.ApiException) as err:
        discovery.create_namespaced_endpoint_slice(ns, bad)
    assert err.value.status == 422
    causes = json.loads(err.value.body)["details"]["causes"]
    assert {"reason": "FieldValueRequired", "field": "endpoints[0].addresses",
            "message": "Required value: must contain at least 1 address"} in causes  # fmt: skip
    discovery.delete_namespaced_endpoint_slice("manual", ns)
    assert kubectl(cluster, "get", "endpointslice", "manual", "-n", ns,
                   check=False).returncode != 0  # fmt: skip
