"""API aggregation against a real control plane, through kubectl 1.33.

An extension API server (tests/fakes/extension_apiserver.py: HTTPS on
127.0.0.1, client certificates of the request-header CA required) behind a
selectorless Service and its Endpoints, registered by an APIService: it
becomes Available (Passed), its group is in discovery and `kubectl
api-resources`, requests reach it with the caller's identity in the
front-proxy headers and the proxy's certificate; the local APIServices are
listed as `kubectl get apiservices` lists them; when its Service is
deleted it is Available=False (ServiceNotFound), its group answers 503 and
the other groups are untouched.
"""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controlplane.apiserver.audit import AuditLog
from controlplane.apiserver.flowcontrol import FlowControl, Limits
from tests.fakes.extension_apiserver import ExtensionServer, serving_pair
from tests.harness.kubectl import NEWEST
from tests.harness.wait import wait_for
from tests.integration.rest.conftest import Cluster

KUBECTL = NEWEST

pytestmark = [pytest.mark.skipif(not KUBECTL.exists(), reason="kubectl 1.33 is not installed")]


def kubectl(cluster: Cluster, *args: str, stdin: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:  # fmt: skip
    done = subprocess.run([str(KUBECTL), *args], input=stdin, capture_output=True, text=True,
                          timeout=60, env=cluster.env())  # fmt: skip
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {done.returncode}\n{done.stderr}")
    return done


def _json(cluster: Cluster, *args: str) -> Any:
    return json.loads(kubectl(cluster, *args, "-o", "json").stdout)


def _condition_is(cluster: Cluster, name: str, status: str) -> dict[str, Any] | None:
    cond = _available(cluster, name)
    return cond if cond.get("status") == status else None


def _available(cluster: Cluster, name: str) -> dict[str, Any]:
    obj = _json(cluster, "get", "apiservice", name)
    conds = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conds if c["type"] == "Available"), {})


@pytest.fixture(scope="module")
def extension(cluster: Cluster) -> Iterator[ExtensionServer]:
    cm = _json(cluster, "get", "configmap", "-n", "kube-system",
               "extension-apiserver-authentication")  # fmt: skip
    data = cm["data"]
    server = ExtensionServer(
        data["requestheader-client-ca-file"],
        json.loads(data["requestheader-allowed-names"]),
        "ext-api.default.svc",
    )
    port = server.start()
    manifest = [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "ext-api", "namespace": "default"},
         "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}},
        {"apiVersion": "v1", "kind": "Endpoints",
         "metadata": {"name": "ext-api", "namespace": "default"},
         "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                      "ports": [{"name": "https", "port": port}]}]},
        {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
         "metadata": {"name": "v1.ext.example.com"},
         "spec": {"group": "ext.example.com", "version": "v1",
                  "service": {"namespace": "default", "name": "ext-api"},
                  "caBundle": base64.b64encode(server.ca_pem).decode(),
                  "groupPriorityMinimum": 1000, "versionPriority": 15}},
    ]  # fmt: skip
    doc = {"apiVersion": "v1", "kind": "List", "items": manifest}
    kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(doc))
    try:
        yield server
    finally:
        kubectl(cluster, "delete", "-f", "-", "--ignore-not-found", stdin=json.dumps(doc),
                check=False)  # fmt: skip
        server.stop()


def test_local_apiservices_are_listed_as_kubernetes_lists_them(cluster: Cluster) -> None:
    out = kubectl(cluster, "get", "apiservices").stdout.splitlines()
    assert out[0].split() == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    rows = {line.split()[0]: line.split()[1:3] for line in out[1:]}
    for name in ("v1.", "v1.apps", "v1.batch", "v2.autoscaling", "v1.apiregistration.k8s.io"):
        assert rows[name] == ["Local", "True"], (name, rows.get(name))
    cond = _available(cluster, "v1.apps")
    assert (cond["status"], cond["reason"]) == ("True", "Local")


def test_apiservice_refuses_a_name_that_is_not_version_dot_group(cluster: Cluster) -> None:
    bad = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
           "metadata": {"name": "v1.wrong.example.com"},
           "spec": {"group": "other.example.com", "version": "v1", "insecureSkipTLSVerify": True,
                    "groupPriorityMinimum": 100, "versionPriority": 10}}  # fmt: skip
    done = kubectl(cluster, "create", "-f", "-", stdin=json.dumps(bad), check=False)
    assert done.returncode != 0
    assert 'metadata.name: Invalid value: "v1.wrong.example.com"' in done.stderr
    assert "spec.insecureSkipTLSVerify" in done.stderr  # no service: nothing to skip for


def test_extension_server_is_available_and_in_discovery(
    cluster: Cluster, extension: ExtensionServer
) -> None:
    cond = wait_for(
        lambda: _condition_is(cluster, "v1.ext.example.com", "True"),
        timeout=30, message="v1.ext.example.com Available",
    )  # fmt: skip
    assert cond is not None
    assert (cond["reason"], cond["message"]) == ("Passed", "all checks passed")
    row = kubectl(cluster, "get", "apiservice", "v1.ext.example.com").stdout.splitlines()[1]
    assert row.split()[1:3] == ["default/ext-api", "True"]
    groups = json.loads(kubectl(cluster, "get", "--raw", "/apis").stdout)["groups"]
    assert any(g["name"] == "ext.example.com" for g in groups)
    listed = kubectl(cluster, "api-resources", "--api-group", "ext.example.com").stdout
    assert "widgets" in listed and "Widget" in listed


def test_its_openapi_v3_document_is_listed_and_served(
    cluster: Cluster, extension: ExtensionServer
) -> None:
    wait_for(lambda: _condition_is(cluster, "v1.ext.example.com", "True"), 30)
    index = json.loads(kubectl(cluster, "get", "--raw", "/openapi/v3").stdout)["paths"]
    assert index["apis/ext.example.com/v1"]["serverRelativeURL"].startswith(
        "/openapi/v3/apis/ext.example.com/v1")  # fmt: skip
    assert "apis/apps/v1" in index
    doc = json.loads(kubectl(cluster, "get", "--raw", "/openapi/v3/apis/ext.example.com/v1").stdout)
    assert "com.example.v1.Widget" in doc["components"]["schemas"]


def test_its_openapi_v2_is_merged_into_the_servers(
    cluster: Cluster, extension: ExtensionServer
) -> None:
    wait_for(lambda: _condition_is(cluster, "v1.ext.example.com", "True"), 30)
    doc = json.loads(kubectl(cluster, "get", "--raw", "/openapi/v2").stdout)
    assert "com.example.v1.Widget" in doc["definitions"]
    assert "io.k8s.api.apps.v1.Deployment" in doc["definitions"]  # ours, still there
    assert "/apis/ext.example.com/v1/namespaces/{namespace}/widgets" in doc["paths"]
    raw = _get(cluster, "/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
    assert b"com.example.v1.Widget" in raw and b"io.k8s.api.apps.v1.Deployment" in raw


def test_requests_reach_it_with_the_front_proxy_identity(
    cluster: Cluster, extension: ExtensionServer
) -> None:
    wait_for(lambda: _available(cluster, "v1.ext.example.com").get("status") == "True", 30)
    extension.seen.clear()
    got = _json(cluster, "get", "widgets.ext.example.com", "-n", "default")
    assert [i["metadata"]["name"] for i in got["items"]] == ["w1"]
    seen = [s for s in extension.seen if s.path.startswith("/apis/ext.example.com/v1/namespaces")]
    assert seen, extension.seen
    who = json.loads(kubectl(cluster, "auth", "whoami", "-o", "json").stdout)["status"]["userInfo"]
    assert seen[-1].user == who["username"]
    assert set(who.get("groups") or []) <= set(seen[-1].groups)
    assert seen[-1].client_cn == "system:auth-proxy"  # the proxy's certificate, verified
    assert got["items"][0]["spec"]["askedBy"] == who["username"]


def test_proxied_requests_take_a_slot_of_the_callers_priority_lane(
    cluster: Cluster, extension: ExtensionServer
) -> None:
    wait_for(lambda: _condition_is(cluster, "v1.ext.example.com", "True"), 30)
    rest = cluster.running.server.rest
    assert rest is not None
    flow = rest.server.flow
    rest.server.flow = no_seats = FlowControl(Limits())
    # Everyone, the admin too, in a priority level with no seats that rejects.
    no_seats.configure(
        [{"metadata": {"name": "all", "uid": "uid-all"},
          "spec": {"priorityLevelConfiguration": {"name": "none"}, "matchingPrecedence": 1,
                   "rules": [{"subjects": [{"kind": "Group", "group": {"name": "*"}}],
                              "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"],
                                                 "resources": ["*"], "namespaces": ["*"]}]}]}}],
        [{"metadata": {"name": "none", "uid": "uid-none"},
          "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 0,
                                                  "limitResponse": {"type": "Reject"}}}},
         {"metadata": {"name": "other", "uid": "uid-other"},
          "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 10,
                                                  "limitResponse": {"type": "Reject"}}}}],
    )  # fmt: skip
    try:
        done = kubectl(cluster, "get", "--raw", "/apis/ext.example.com/v1/namespaces/default/widgets",
                       check=False)  # fmt: skip
    finally:
        rest.server.flow = flow
    assert done.returncode != 0 and "Too many requests, please try again later." in done.stderr


def test_proxied_requests_are_audited(
    cluster: Cluster, extension: ExtensionServer, tmp_path: Path
) -> None:
    wait_for(lambda: _condition_is(cluster, "v1.ext.example.com", "True"), 30)
    rest = cluster.running.server.rest
    assert rest is not None
    log = tmp_path / "audit.log"
    wanted = ("get", {"resource": "widgets", "apiGroup": "ext.example.com", "apiVersion": "v1",
                      "namespace": "default", "name": "w1"})  # fmt: skip

    def refs() -> list[tuple[str, Any]]:
        lines = log.read_text().splitlines() if log.exists() else []
        return [(e["verb"], e.get("objectRef")) for e in map(json.loads, lines)]

    rest.server.audit = AuditLog(log)  # this test's log, then none again
    try:
        kubectl(cluster, "get", "widgets.ext.example.com", "w1", "-n", "default", check=False)
        # The event's last stage (ResponseComplete) is written once the
        # answer has gone, so it may land after kubectl has exited.
        wait_for(lambda: wanted in refs(), 10, message=f"{wanted} in the audit log")
    finally:
        rest.server.audit = None


def test_a_server_certificate_the_ca_bundle_does_not_sign_fails_the_discovery_check(
    cluster: Cluster, extension: ExtensionServer
) -> None:
    other_ca = serving_pair("nobody.example.com")[0]
    bad = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
           "metadata": {"name": "v1.untrusted.example.com"},
           "spec": {"group": "untrusted.example.com", "version": "v1",
                    "service": {"namespace": "default", "name": "ext-api"},
                    "caBundle": base64.b64encode(other_ca).decode(),
                    "groupPriorityMinimum": 1000, "versionPriority": 15}}  # fmt: skip
    kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(bad))
    try:
        cond = wait_for(lambda: _condition_is(cluster, "v1.untrusted.example.com", "False"),
                        timeout=30, message="v1.untrusted.example.com unavailable")  # fmt: skip
        assert cond is not None and cond["reason"] == "FailedDiscoveryCheck"
        assert cond["message"].startswith("failing or missing response from https://127.0.0.1:")
        assert "certificate verify failed" in cond["message"], cond["message"]
        done = kubectl(cluster, "get", "--raw", "/apis/untrusted.example.com/v1", check=False)
        assert "the server is currently unable to handle the request" in done.stderr
    finally:
        kubectl(cluster, "delete", "apiservice", "v1.untrusted.example.com", check=False)


def test_insecure_skip_tls_verify_passes_and_a_404_fails_the_discovery_check(
    cluster: Cluster, extension: ExtensionServer
) -> None:
    def apiservice(group: str) -> dict[str, Any]:
        return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": f"v1.{group}"},
                "spec": {"group": group, "version": "v1", "insecureSkipTLSVerify": True,
                         "service": {"namespace": "default", "name": "ext-api"},
                         "groupPriorityMinimum": 1000, "versionPriority": 15}}  # fmt: skip

    served = {"kind": "APIResourceList", "groupVersion": "insecure.example.com/v1", "resources": []}
    extension.answer = lambda path: served if path == "/apis/insecure.example.com/v1" else None
    doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        apiservice("insecure.example.com"), apiservice("missing.example.com")]})  # fmt: skip
    kubectl(cluster, "apply", "-f", "-", stdin=doc)
    try:
        cond = wait_for(lambda: _condition_is(cluster, "v1.insecure.example.com", "True"),
                        timeout=30, message="v1.insecure.example.com Available")  # fmt: skip
        assert cond is not None and cond["reason"] == "Passed"
        cond = wait_for(lambda: _condition_is(cluster, "v1.missing.example.com", "False"),
                        timeout=30, message="v1.missing.example.com unavailable")  # fmt: skip
        assert cond is not None and cond["reason"] == "FailedDiscoveryCheck"
        assert cond["message"].endswith("/apis/missing.example.com/v1: 404"), cond["message"]
        assert "bad status from https://127.0.0.1:" in cond["message"]
    finally:
        extension.answer = None
        kubectl(cluster, "delete", "-f", "-", "--ignore-not-found", stdin=doc, check=False)


def test_a_gone_service_makes_it_unavailable_and_only_its_group_answers_503(
    cluster: Cluster, extension: ExtensionServer
) -> None:
    wait_for(lambda: _available(cluster, "v1.ext.example.com").get("status") == "True", 30)
    kubectl(cluster, "delete", "service", "ext-api", "-n", "default")
    cond = wait_for(
        lambda: _condition_is(cluster, "v1.ext.example.com", "False"),
        timeout=30, message="v1.ext.example.com unavailable",
    )  # fmt: skip
    assert cond is not None
    assert cond["reason"] == "ServiceNotFound"
    assert cond["message"] == 'service/ext-api in "default" is not present'
    row = kubectl(cluster, "get", "apiservice", "v1.ext.example.com").stdout.splitlines()[1]
    assert row.split()[2:4] == ["False", "(ServiceNotFound)"]
    done = kubectl(cluster, "get", "--raw", "/apis/ext.example.com/v1/namespaces/default/widgets",
                   check=False)  # fmt: skip
    assert done.returncode != 0
    assert "the server is currently unable to handle the request" in done.stderr, done.stderr
    # Aggregated discovery marks the version Stale (client-go's failed group/version)...
    doc = _aggregated_apis(cluster)
    ext = next(i for i in doc["items"] if i["metadata"]["name"] == "ext.example.com")
    (version,) = ext["versions"]  # the resources last listed, as kube-aggregator keeps them
    assert version["freshness"] == "Stale" and version["version"] == "v1"
    assert [r["resource"] for r in version["resources"]] == ["widgets"]
    # ... and everything else works: api-resources lists the other groups, gets work.
    resources = kubectl(cluster, "api-resources")
    assert "deployments" in resources.stdout and "ext.example.com/v1" not in resources.stdout
    kubectl(cluster, "get", "deployments", "-A")
    kubectl(cluster, "get", "--raw", "/apis/apps/v1")


def _get(cluster: Cluster, path: str, accept: str) -> bytes:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    token = config["users"][0]["user"]["token"]
    ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"])
    context = ssl.create_default_context(cadata=ca.decode())
    context.check_hostname = False
    request = urllib.request.Request(f"{cluster.url}{path}", headers={
        "Authorization": f"Bearer {token}", "Accept": accept})  # fmt: skip
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        data: bytes = response.read()
        return data


def _aggregated_apis(cluster: Cluster) -> Any:
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    return json.loads(_get(cluster, "/apis", accept))


def _register(cluster: Cluster, server: ExtensionServer, service: str, port: int) -> str:
    """A selectorless Service + Endpoints for the server, and its APIService; the manifest."""
    manifest = [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": service, "namespace": "default"},
         "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}},
        {"apiVersion": "v1", "kind": "Endpoints",
         "metadata": {"name": service, "namespace": "default"},
         "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                      "ports": [{"name": "https", "port": port}]}]},
        {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
         "metadata": {"name": f"{server.version}.{server.group}"},
         "spec": {"group": server.group, "version": server.version,
                  "service": {"namespace": "default", "name": service},
                  "caBundle": base64.b64encode(server.ca_pem).decode(),
                  "groupPriorityMinimum": 100, "versionPriority": 100}},
    ]  # fmt: skip
    doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": manifest})
    kubectl(cluster, "apply", "-f", "-", stdin=doc)
    return doc


NOW = "2026-01-01T00:00:00Z"


def _external(path: str) -> dict[str, Any] | None:
    if "/namespaces/default/queue_messages" not in path:
        return None
    return {"kind": "ExternalMetricValueList", "apiVersion": "external.metrics.k8s.io/v1beta1",
            "metadata": {}, "items": [
                {"metricName": "queue_messages", "metricLabels": {"queue": "jobs"},
                 "timestamp": NOW, "value": "30"}]}  # fmt: skip


def _custom(path: str) -> dict[str, Any] | None:
    if "/namespaces/default/services/web/requests_per_second" not in path:
        return None
    return {"kind": "MetricValueList", "apiVersion": "custom.metrics.k8s.io/v1beta2",
            "metadata": {}, "items": [
                {"describedObject": {"kind": "Service", "namespace": "default", "name": "web",
                                     "apiVersion": "/v1"},
                 "metric": {"name": "requests_per_second"}, "timestamp": NOW,
                 "windowSeconds": 60, "value": "25"}]}  # fmt: skip


@pytest.fixture(scope="module")
def adapter(cluster: Cluster) -> Iterator[None]:
    data = _json(cluster, "get", "configmap", "-n", "kube-system",
                 "extension-apiserver-authentication")["data"]  # fmt: skip
    ca, names = (
        data["requestheader-client-ca-file"],
        json.loads(data["requestheader-allowed-names"]),
    )
    external = ExtensionServer(ca, names, "external-adapter.default.svc",
                               "external.metrics.k8s.io", "v1beta1", answer=_external,
                               resources=[{"name": "queue_messages", "singularName": "",
                                           "namespaced": True, "kind": "ExternalMetricValueList",
                                           "verbs": ["get"]}])  # fmt: skip
    custom = ExtensionServer(ca, names, "custom-adapter.default.svc", "custom.metrics.k8s.io",
                             "v1beta2", answer=_custom,
                             resources=[{"name": "services/requests_per_second",
                                         "singularName": "", "namespaced": True,
                                         "kind": "MetricValueList", "verbs": ["get"]}])  # fmt: skip
    docs = [_register(cluster, external, "external-adapter", external.start()),
            _register(cluster, custom, "custom-adapter", custom.start())]  # fmt: skip
    try:
        yield
    finally:
        for doc in docs:
            kubectl(cluster, "delete", "-f", "-", "--ignore-not-found", stdin=doc, check=False)
        external.stop()
        custom.stop()


def _deployment_and_hpa(name: str, metric: dict[str, Any]) -> str:
    pod = {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}]}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": name, "namespace": "default"},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                           "template": {"metadata": {"labels": {"app": name}}, "spec": pod}}}  # fmt: skip
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": name, "namespace": "default"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                    "minReplicas": 1, "maxReplicas": 5, "metrics": [metric]}}  # fmt: skip
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [deployment, hpa]})


def _hpa_status(cluster: Cluster, name: str) -> dict[str, Any] | None:
    st: dict[str, Any] = _json(cluster, "get", "hpa", name).get("status") or {}
    return st if (st.get("desiredReplicas") or 0) > 1 else None


def test_hpa_scales_on_external_and_object_metrics_through_aggregation(
    cluster: Cluster, adapter: None
) -> None:
    for name in ("v1beta1.external.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io"):
        wait_for(lambda n=name: _condition_is(cluster, n, "True"), timeout=30,  # type: ignore[misc]
                 message=f"{name} Available")  # fmt: skip
    external = {"type": "External", "external": {
        "metric": {"name": "queue_messages", "selector": {"matchLabels": {"queue": "jobs"}}},
        "target": {"type": "AverageValue", "averageValue": "10"}}}  # fmt: skip
    obj = {"type": "Object", "object": {
        "metric": {"name": "requests_per_second"},
        "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "web"},
        "target": {"type": "AverageValue", "averageValue": "10"}}}  # fmt: skip
    docs = [_deployment_and_hpa("queue-worker", external), _deployment_and_hpa("web-api", obj)]
    for doc in docs:
        kubectl(cluster, "apply", "-f", "-", stdin=doc)
    try:
        st = wait_for(lambda: _hpa_status(cluster, "queue-worker"), timeout=60,
                      message="the External-metric HPA scaling")  # fmt: skip
        assert st is not None and st["desiredReplicas"] == 3  # 30 messages, 10 a replica
        current = st["currentMetrics"][0]
        assert current["type"] == "External"
        assert current["external"]["current"] == {"averageValue": "30"}
        st = wait_for(lambda: _hpa_status(cluster, "web-api"), timeout=60,
                      message="the Object-metric HPA scaling")  # fmt: skip
        assert st is not None and st["desiredReplicas"] == 3  # 25 requests/s, 10 a replica
        assert st["currentMetrics"][0]["object"]["current"] == {"averageValue": "25"}
        scaled = _json(cluster, "get", "deployment", "queue-worker")["spec"]["replicas"]
        assert scaled == 3
    finally:
        for doc in docs:
            kubectl(cluster, "delete", "-f", "-", "--ignore-not-found", "--wait=false",
                    stdin=doc, check=False)  # fmt: skip
