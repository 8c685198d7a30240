"""The API server's metric labels (controlplane/apiserver/metrics.py):
kube-apiserver's verbs and scopes, a bounded label set whatever the request
names, storage calls by resource; and the node proxy's path."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from controlplane.api.kinds import by_kind
from controlplane.apiserver.flowcontrol import FlowControl, Limits
from controlplane.apiserver.metrics import ApiServerMetrics, labels, rest_verb, scope
from controlplane.apiserver.rest.paths import resolve
from controlplane.storage.timed import resource_of
from machinery import metrics


def test_rest_verbs_and_scopes_as_kube_apiserver_reports_them() -> None:
    assert rest_verb("GET", named=False, watch=False, subresource="") == "LIST"
    assert rest_verb("GET", named=True, watch=False, subresource="") == "GET"
    assert rest_verb("GET", named=False, watch=True, subresource="") == "WATCH"
    assert rest_verb("POST", named=True, watch=False, subresource="exec") == "CONNECT"
    assert rest_verb("GET", named=True, watch=False, subresource="proxy") == "CONNECT"
    pod, node = by_kind("Pod"), by_kind("Node")
    assert scope(pod, "default", "") == "namespace"
    assert scope(pod, "", "") == "cluster"
    assert scope(node, "", "n1") == "resource"
    assert labels("POST", by_kind("Deployment"), "v1", "", "namespace") == (
        "POST", "apps", "v1", "deployments", "", "namespace", "apiserver")  # fmt: skip


def test_grpc_calls_of_unknown_kinds_are_not_remembered_and_carry_no_name() -> None:
    found = ApiServerMetrics(FlowControl(Limits()))
    for i in range(100):  # a client inventing kinds cannot grow the cache or the series
        key = found.rpc_labels("Create", f"Nope{i}", "ns")
        assert key == ("POST", "", "", "", "", "", "apiserver")
    assert len(found._rpc_keys) == 0
    key = found.rpc_labels("Get", "Pod", "default")
    assert key == ("GET", "", "v1", "pods", "", "resource", "apiserver")
    for _ in range(3):
        assert key is not None
        found.request(key, 200, 0.01)
    found.observe_storage("get", resource_of("/registry/pods/default/web-1"), 0.001)
    text = metrics.render(found.registry).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    (sample,) = families["apiserver_request"].samples
    assert sample.value == 3 and sample.labels["code"] == "200"
    storage = [s for s in families["etcd_request_duration_seconds"].samples
               if s.name.endswith("_count")]  # fmt: skip
    assert storage[0].labels == {"operation": "get", "type": "pods"}
    assert "apiserver_request_created" not in text  # no _created series


def test_node_proxy_paths() -> None:
    target = resolve(["api", "v1", "nodes", "n1", "proxy", "metrics", "cadvisor"])
    assert target is not None
    assert (target.name, target.subresource, target.proxy_path) == (
        "n1", "proxy", "/metrics/cadvisor")  # fmt: skip
    bare = resolve(["api", "v1", "nodes", "n1", "proxy"])
    assert bare is not None and bare.subresource == "proxy" and bare.proxy_path == ""


def test_priority_levels_seats_are_reported_as_kube_apiserver_does() -> None:
    """apiserver_flowcontrol_{nominal,lower,upper,current}_limit_seats per
    Limited level (the exempt level has none) and the fair fraction."""
    found = ApiServerMetrics(FlowControl(Limits(concurrency=245)))
    text = metrics.render(found.registry).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}

    def seats(figure: str) -> dict[str, float]:
        family = families[f"apiserver_flowcontrol_{figure}_limit_seats"]
        return {s.labels["priority_level"]: s.value for s in family.samples}

    assert seats("nominal")["global-default"] == 20 and seats("lower")["global-default"] == 10
    assert seats("upper")["global-default"] == 20 + 245  # borrowingLimitPercent unset
    assert "exempt" not in seats("current")
    assert sum(seats("current").values()) == sum(seats("nominal").values())
    (fair,) = families["apiserver_flowcontrol_seat_fair_frac"].samples
    assert fair.value > 1  # idle levels lend: each gets more than its floor
