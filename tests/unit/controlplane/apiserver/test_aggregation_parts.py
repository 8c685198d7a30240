"""The pure parts of API aggregation and of the built-in metrics API: an
APIService's Service to endpoint URLs (with kube-aggregator's reasons), the
delegated groups merged into discovery, the front-proxy headers and RBAC
attributes of a proxied request, NodeMetrics/PodMetrics rates over the
window, and the HPA's reading of a PodMetricsList."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.apiserver.aggregator.availability import Delegate
from controlplane.apiserver.aggregator.endpoints import Unresolved, resolve
from controlplane.apiserver.aggregator.proxy import attributes, identity_headers
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.metricsapi.collector import Pair, Sample
from controlplane.apiserver.metricsapi.objects import memory_quantity, node_metrics, pod_metrics
from controlplane.apiserver.rest import delegated
from controlplane.controllers.metrics_api import samples

SERVICE = {"metadata": {"name": "ext", "namespace": "ns"},
           "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443}]}}  # fmt: skip
ENDPOINTS = {"metadata": {"name": "ext", "namespace": "ns"},
             "subsets": [{"addresses": [{"ip": "10.0.0.5"}, {"ip": "fd00::5"}],
                          "ports": [{"name": "https", "port": 8443}]}]}  # fmt: skip


def reader(*objs: dict[str, Any]) -> Any:
    table = {(o.get("kind") or ("Endpoints" if "subsets" in o else "Service")): o for o in objs}
    return lambda kind, ns, name: table.get(kind)


def test_endpoints_of_the_service_port_are_dialed_directly() -> None:
    urls = resolve(reader(SERVICE, ENDPOINTS), "ns", "ext", 443)
    assert urls == ["https://10.0.0.5:8443", "https://[fd00::5]:8443"]


@pytest.mark.parametrize(
    ("objs", "port", "reason", "message"),
    [
        ((), 443, "ServiceNotFound", 'service/ext in "ns" is not present'),
        ((SERVICE,), 8080, "ServiceAccessError", 'service/ext in "ns" is not listening on port 8080'),
        ((SERVICE,), 443, "MissingEndpoints", 'cannot find endpoints for service/ext in "ns"'),
        ((SERVICE, {**ENDPOINTS, "subsets": []}), 443, "MissingEndpoints",
         'endpoints for service/ext in "ns" have no addresses with port name "https"'),
    ],
)  # fmt: skip
def test_why_a_service_cannot_be_reached(
    objs: tuple[dict[str, Any], ...], port: int, reason: str, message: str
) -> None:
    with pytest.raises(Unresolved) as caught:
        resolve(reader(*objs), "ns", "ext", port)
    assert (caught.value.reason, caught.value.message) == (reason, message)


def delegate(available: bool, priority: int = 15) -> Delegate:
    resources = {"resources": [{"name": "widgets", "singularName": "widget", "namespaced": True,
                                "kind": "Widget", "verbs": ["get", "list"]}]}  # fmt: skip
    return Delegate("v1.ext.io", "ns/ext", "ext.ns.svc", ("https://10.0.0.5:443",), None,
                    available, "Passed" if available else "FailedDiscoveryCheck", "",
                    resources if available else None, 1000, priority)  # fmt: skip


def test_a_delegated_group_joins_the_group_list_and_replaces_a_local_version() -> None:
    local = {"kind": "APIGroupList", "groups": [
        {"name": "metrics.k8s.io", "versions": [{"groupVersion": "metrics.k8s.io/v1beta1",
                                                 "version": "v1beta1"}]}]}  # fmt: skip
    table = {"ext.io/v1": delegate(True, 15), "ext.io/v2": delegate(True, 20),
             "metrics.k8s.io/v1beta1": delegate(False)}  # fmt: skip
    merged = delegated.group_list(local, table)
    groups = {g["name"]: g for g in merged["groups"]}
    assert [v["version"] for v in groups["ext.io"]["versions"]] == ["v2", "v1"]
    assert groups["ext.io"]["preferredVersion"]["version"] == "v2"
    assert [v["version"] for v in groups["metrics.k8s.io"]["versions"]] == ["v1beta1"]
    assert delegated.group("ext.io", None, table)["kind"] == "APIGroup"  # type: ignore[index]


def test_aggregated_discovery_has_the_servers_resources_or_stale() -> None:
    local = {"items": [{"metadata": {"name": "metrics.k8s.io"},
                        "versions": [{"version": "v1beta1", "resources": [{"resource": "pods"}],
                                      "freshness": "Current"}]}]}  # fmt: skip
    table = {"ext.io/v1": delegate(True), "metrics.k8s.io/v1beta1": delegate(False)}
    items = {i["metadata"]["name"]: i for i in delegated.aggregated(local, table)["items"]}
    assert items["metrics.k8s.io"]["versions"] == [
        {"version": "v1beta1", "resources": [], "freshness": "Stale"}]  # fmt: skip
    ext = items["ext.io"]["versions"][0]
    assert ext["freshness"] == "Current"
    assert ext["resources"][0]["resource"] == "widgets"
    assert ext["resources"][0]["responseKind"] == {"group": "ext.io", "version": "v1",
                                                   "kind": "Widget"}  # fmt: skip


def test_the_caller_travels_in_front_proxy_headers() -> None:
    who = Identity("alice", groups=("dev", "system:authenticated"),
                   extra=(("scopes.example.com/x", ("a", "b")),))  # fmt: skip
    assert identity_headers(who) == [
        ("X-Remote-User", "alice"), ("X-Remote-Group", "dev"),
        ("X-Remote-Group", "system:authenticated"),
        ("X-Remote-Extra-scopes.example.com%2Fx", "a"),
        ("X-Remote-Extra-scopes.example.com%2Fx", "b"),
    ]  # fmt: skip


def test_a_proxied_request_is_authorized_as_its_resource_and_verb() -> None:
    a = attributes("GET", {}, "metrics.k8s.io", ["namespaces", "default", "pods"])
    assert a is not None and (a.verb, a.resource, a.namespace) == ("list", "pods", "default")
    a = attributes("GET", {"watch": "true"}, "ext.io", ["widgets"])
    assert a is not None and a.verb == "watch"
    a = attributes("DELETE", {}, "ext.io", ["namespaces", "ns", "widgets", "w", "status"])
    assert a is not None and (a.verb, a.name, a.subresource) == ("delete", "w", "status")
    assert attributes("GET", {}, "ext.io", []) is None  # discovery: a non-resource path


def test_cpu_is_the_counters_rate_over_the_window_memory_the_working_set() -> None:
    s = 10**9
    pair = Pair(Sample(100 * s, 40 * s, 1 << 20, (("c", 40 * s, 1 << 20),)),
                Sample(115 * s, 43 * s, 3 << 20, (("c", 43 * s, 3 << 20),)))  # fmt: skip
    node = node_metrics("n1", pair, {"zone": "a"})
    assert node is not None
    assert node["usage"] == {"cpu": "200000000n", "memory": "3Mi"}
    assert node["window"] == "15s" and node["metadata"]["labels"] == {"zone": "a"}
    pod = pod_metrics("ns", "p", pair, None)
    assert pod is not None and pod["containers"] == [
        {"name": "c", "usage": {"cpu": "200000000n", "memory": "3Mi"}}]  # fmt: skip
    restarted = Pair(pair.old, Sample(115 * s, 1 * s, 1 << 20, (("c", 1 * s, 1 << 20),)))
    assert pod_metrics("ns", "p", restarted, None) is None  # counters went back: no rate
    assert node_metrics("n1", Pair(None, pair.new), None) is None  # one sample: none yet
    assert (memory_quantity(1536), memory_quantity(1000)) == ("1536", "1000")
    assert memory_quantity(3 * 1024) == "3Ki"


def test_the_hpa_sums_containers_and_skips_pods_missing_one() -> None:
    doc = {"items": [
        {"metadata": {"name": "a"}, "timestamp": "2026-01-01T00:00:00Z", "window": "15.5s",
         "containers": [{"name": "x", "usage": {"cpu": "100m", "memory": "1Mi"}},
                        {"name": "y", "usage": {"cpu": "50000000n", "memory": "1Mi"}}]},
        {"metadata": {"name": "b"}, "containers": [{"name": "x", "usage": {"memory": "1Mi"}}]},
    ]}  # fmt: skip
    cpu = samples(doc, "cpu")
    assert list(cpu) == ["a"] and cpu["a"].value == pytest.approx(0.15)
    assert cpu["a"].window == 15.5 and cpu["a"].timestamp > 0
    assert samples(doc, "memory")["b"].value == 1 << 20
