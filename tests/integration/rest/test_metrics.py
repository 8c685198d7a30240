"""The API server's /metrics (issue 34): kube-apiserver's series, names and
labels, parsed with prometheus_client's text parser; served to callers
RBAC allows the non-resource URL (system:monitoring, as Kubernetes'
bootstrap policy); bounded whatever the number of objects."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cryptography import x509
from prometheus_client.parser import text_string_to_metric_families

from tests.harness.wait import wait_for
from tests.integration.rest.conftest import Cluster

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("need_kubectl")]

APISERVER_NAMES = {
    "apiserver_request": "counter",  # apiserver_request_total
    "apiserver_request_duration_seconds": "histogram",
    "apiserver_current_inflight_requests": "gauge",
    "apiserver_storage_objects": "gauge",
    "apiserver_longrunning_requests": "gauge",
    "apiserver_registered_watchers": "gauge",
    "apiserver_flowcontrol_current_executing_requests": "gauge",
    "apiserver_flowcontrol_rejected_requests": "counter",
    "etcd_request_duration_seconds": "histogram",
    "process_cpu_seconds": "counter",
    "process_resident_memory_bytes": "gauge",
    "process_start_time_seconds": "gauge",
}
REQUEST_LABELS = {"verb", "group", "version", "resource", "subresource", "scope", "component",
                  "code"}  # fmt: skip


def scrape(cluster: Cluster, *args: str) -> dict[str, Any]:
    text = cluster.kubectl("get", "--raw", "/metrics", *args).stdout
    return {f.name: f for f in text_string_to_metric_families(text)}


def samples(families: dict[str, Any], name: str) -> list[Any]:
    return list(families[name].samples)


def test_apiserver_metrics_have_kubernetes_names_and_labels(cluster: Cluster) -> None:
    cluster.kubectl("create", "configmap", "m1", "--from-literal=a=b")
    cluster.kubectl("get", "configmap", "m1")
    families = scrape(cluster)
    for name, kind in APISERVER_NAMES.items():
        assert name in families, f"{name} missing from /metrics"
        assert families[name].type == kind, (name, families[name].type)
    requests = samples(families, "apiserver_request")
    assert all(set(s.labels) == REQUEST_LABELS for s in requests), requests[:3]
    created = [s for s in requests if s.labels["resource"] == "configmaps"
               and s.labels["verb"] == "POST" and s.labels["code"] == "201"]  # fmt: skip
    assert created and created[0].labels["scope"] == "namespace", requests
    assert created[0].labels["component"] == "apiserver" and created[0].value >= 1
    got = [s for s in requests if s.labels["resource"] == "configmaps"
           and s.labels["verb"] == "GET" and s.labels["scope"] == "resource"]  # fmt: skip
    assert got and got[0].labels["code"] == "200"
    buckets = {s.labels["le"] for s in samples(families, "apiserver_request_duration_seconds")
               if s.name.endswith("_bucket")}  # fmt: skip
    assert {"0.005", "0.025", "1.0", "60.0", "+Inf"} <= buckets
    stored = {s.labels["resource"]: s.value for s in samples(families, "apiserver_storage_objects")}
    assert stored["namespaces"] >= 4 and stored["configmaps"] >= 1, stored
    kinds = {
        s.labels["request_kind"] for s in samples(families, "apiserver_current_inflight_requests")
    }
    assert kinds == {"readOnly", "mutating"}

    def watched() -> set[str]:
        found = samples(scrape(cluster), "apiserver_registered_watchers")
        return {s.labels["kind"] for s in found if s.value > 0}

    # The scheduler and the controllers watch pods once they have started.
    wait_for(lambda: "Pod" in watched(), timeout=60, message="a registered watcher of pods")
    open_watches = samples(scrape(cluster), "apiserver_longrunning_requests")
    assert any(s.labels["verb"] == "WATCH" and s.value > 0 for s in open_watches)
    ops = {(s.labels["operation"], s.labels["type"])
           for s in samples(families, "etcd_request_duration_seconds")}  # fmt: skip
    assert ("create", "configmaps") in ops and ("get", "configmaps") in ops, sorted(ops)


def test_metrics_need_the_nonresource_url(cluster: Cluster) -> None:
    ns = "metrics-rbac"
    cluster.kubectl("create", "namespace", ns)
    cluster.kubectl("create", "serviceaccount", "scraper", "-n", ns)
    token = cluster.kubectl("create", "token", "scraper", "-n", ns).stdout.strip()
    as_sa = ("--token", token, "--kubeconfig", str(cluster.kubeconfig))
    refused = cluster.kubectl("get", "--raw", "/metrics", *as_sa, check=False)
    assert refused.returncode != 0 and "forbidden" in refused.stderr.lower(), refused.stderr
    # Kubernetes' bootstrap role for monitoring, bound to the ServiceAccount.
    role = json.loads(cluster.kubectl("get", "clusterrole", "system:monitoring", "-o",
                                      "json").stdout)  # fmt: skip
    assert "/metrics" in role["rules"][0]["nonResourceURLs"]
    cluster.kubectl("create", "clusterrolebinding", "scraper-monitoring",
                    "--clusterrole=system:monitoring", f"--serviceaccount={ns}:scraper")  # fmt: skip

    def allowed() -> bool:
        return cluster.kubectl("get", "--raw", "/metrics", *as_sa, check=False).returncode == 0

    wait_for(allowed, timeout=10, message="the ServiceAccount may read /metrics")
    families = scrape(cluster, *as_sa)
    assert "apiserver_request" in families


def _server_series(families: dict[str, Any]) -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    """The server-side series: each sample's name and labels."""
    return {
        (s.name, tuple(sorted(s.labels.items())))
        for name, f in families.items() if name.startswith(("apiserver_", "etcd_"))
        for s in f.samples
    }  # fmt: skip


def test_series_do_not_grow_with_objects(cluster: Cluster) -> None:
    """No per-object or per-namespace labels: 150 more objects in 15 more
    namespaces, each created, read, updated and deleted, add no server-side
    series (one may go meanwhile; only new ones count), and no label names them."""

    def churn(prefix: str, namespaces: int, per: int) -> None:
        docs = []
        for i in range(namespaces):
            docs.append({"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": f"{prefix}-{i}"}})  # fmt: skip
            docs += [{"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": f"c{j}", "namespace": f"{prefix}-{i}"},
                      "data": {"k": "v"}} for j in range(per)]  # fmt: skip
        cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                               "items": docs}))  # fmt: skip
        for i in range(namespaces):
            cluster.kubectl("get", "configmap", "c0", "-n", f"{prefix}-{i}")
            cluster.kubectl("get", "configmaps", "-n", f"{prefix}-{i}")
            cluster.kubectl("delete", "configmap", "c0", "-n", f"{prefix}-{i}")
            cluster.kubectl("get", "configmap", "nothere", "-n", f"{prefix}-{i}", check=False)

    churn("warm", 1, 2)  # every verb and code seen once
    before = _server_series(scrape(cluster))
    churn("many", 15, 10)
    after = _server_series(scrape(cluster))
    # No series names a namespace or object of the churn ...
    names = {f"many-{i}" for i in range(15)} | {f"c{j}" for j in range(10)} | {"nothere"}
    named = {s for s in after if any(v in names for _, v in s[1])}
    assert not named, sorted(named)[:20]
    # ... nor grows with them: the in-process components' own first requests
    # of a kind (a Lease renewal, a FlowSchema's first seat) may land in the
    # window, but not a series per namespace (15) or per object (150).
    grown = {
        (n.removesuffix("_bucket").removesuffix("_count").removesuffix("_sum"),
         tuple(kv for kv in labels if kv[0] != "le"))
        for n, labels in after - before
    }  # fmt: skip
    assert len(grown) < 15, sorted(grown)


def test_certificate_expiry_is_exported(cluster: Cluster) -> None:
    """Each certificate under pki/ with its notAfter (issue 34: expiry as a
    metric), from the files themselves, so a rotation shows at the next scrape."""
    families = scrape(cluster)
    name = "skiff_certificate_expiration_timestamp_seconds"
    assert families[name].type == "gauge"
    exported = {s.labels["certificate"]: s.value for s in samples(families, name)}
    pki = cluster.kubeconfig.parent / "pki"  # the data dir holds the kubeconfig
    for cert in ("ca.crt", "server.crt"):
        when = x509.load_pem_x509_certificate((pki / cert).read_bytes()).not_valid_after_utc
        assert exported[cert] == when.timestamp(), (cert, exported)
