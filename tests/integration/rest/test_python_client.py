"""The official `kubernetes` Python client, unchanged, against the REST API."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.rest.conftest import Cluster

kubernetes = pytest.importorskip("kubernetes")
# The client's models type every field Optional; these tests read what the
# server sent, so they use it untyped.
client: Any = kubernetes.client
config: Any = kubernetes.config
watch: Any = kubernetes.watch

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def api(cluster: Cluster) -> Any:
    return config.new_client_from_config(config_file=str(cluster.kubeconfig))


def configmap(name: str, **data: str) -> Any:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data=data)


def test_create_get_patch_list_delete(api: Any) -> None:
    core = client.CoreV1Api(api)
    created = core.create_namespaced_config_map("default", configmap("py", a="1"))
    assert created.metadata.uid and created.data == {"a": "1"}
    core.patch_namespaced_config_map("py", "default", {"data": {"b": "2"}})
    assert core.read_namespaced_config_map("py", "default").data == {"a": "1", "b": "2"}
    listed = core.list_namespaced_config_map("default", label_selector="")
    assert "py" in [c.metadata.name for c in listed.items]
    assert listed.metadata.resource_version
    everywhere = core.list_namespace()
    assert {"default", "kube-system"} <= {n.metadata.name for n in everywhere.items}
    core.delete_namespaced_config_map("py", "default")
    with pytest.raises(client.ApiException) as gone:
        core.read_namespaced_config_map("py", "default")
    assert gone.value.status == 404


def test_deleting_an_unbound_pod_answers_the_pod(api: Any) -> None:
    """A pod no node holds goes at once; its DELETE still answers the Pod, as
    Kubernetes' pod registry (ReturnDeletedObject) does: the client reads the
    answer as a V1Pod and refuses a Status."""
    core = client.CoreV1Api(api)
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="gone-at-once"),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")],
                              node_selector={"no-such": "node"}),
    )  # fmt: skip
    core.create_namespaced_pod("default", pod)
    answer = core.delete_namespaced_pod("gone-at-once", "default")
    assert isinstance(answer, client.V1Pod) and answer.metadata.name == "gone-at-once"
    with pytest.raises(client.ApiException) as gone:
        core.read_namespaced_pod("gone-at-once", "default")
    assert gone.value.status == 404


def test_paged_list(api: Any) -> None:
    core = client.CoreV1Api(api)
    for i in range(5):
        core.create_namespaced_config_map("default", configmap(f"page-{i}"))
    first = core.list_namespaced_config_map("default", limit=2, label_selector="")
    assert len(first.items) == 2 and first.metadata._continue
    seen = [c.metadata.name for c in first.items]
    token = first.metadata._continue
    while token:
        page = core.list_namespaced_config_map("default", limit=2, _continue=token)
        seen += [c.metadata.name for c in page.items]
        token = page.metadata._continue
    assert {f"page-{i}" for i in range(5)} <= set(seen)
    core.delete_collection_namespaced_config_map("default")
    assert not [
        c for c in core.list_namespaced_config_map("default").items
        if c.metadata.name.startswith("page-")
    ]  # fmt: skip


def test_watch_resumes_from_a_resource_version(api: Any) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map("default", configmap("w1"))
    rv = core.read_namespaced_config_map("w1", "default").metadata.resource_version
    core.patch_namespaced_config_map("w1", "default", {"data": {"x": "1"}})
    core.create_namespaced_config_map("default", configmap("w2"))
    events = []
    w = watch.Watch()
    for event in w.stream(
        core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=5
    ):
        # Only the test's own: the root CA publisher may write the namespace's
        # kube-root-ca.crt in the same window.
        name = event["object"].metadata.name
        if name in ("w1", "w2"):
            events.append((event["type"], name))
        if len(events) == 2:
            w.stop()
    assert events == [("MODIFIED", "w1"), ("ADDED", "w2")]


def test_watch_without_version_starts_with_the_current_state(api: Any) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map("default", configmap("initial"))
    w = watch.Watch()
    names = []
    for event in w.stream(core.list_namespaced_config_map, "default", timeout_seconds=5):
        assert event["type"] == "ADDED"
        names.append(event["object"].metadata.name)
        if "initial" in names:
            w.stop()
    assert "initial" in names


def test_deployment_scale_and_status(api: Any) -> None:
    apps = client.AppsV1Api(api)
    body = {
        "metadata": {"name": "py-deploy"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "py"}},
            "template": {
                "metadata": {"labels": {"app": "py"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }
    apps.create_namespaced_deployment("default", body)
    apps.patch_namespaced_deployment_scale("py-deploy", "default", {"spec": {"replicas": 2}})
    scale = apps.read_namespaced_deployment_scale("py-deploy", "default")
    assert scale.spec.replicas == 2
    apps.delete_namespaced_deployment("py-deploy", "default")


def test_hpa_at_autoscaling_v1_and_v2(api: Any) -> None:
    v1 = client.AutoscalingV1Api(api)
    body = {
        "metadata": {"name": "hpa"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                 "minReplicas": 1, "maxReplicas": 4, "targetCPUUtilizationPercentage": 70},
    }  # fmt: skip
    made = v1.create_namespaced_horizontal_pod_autoscaler("default", body)
    assert made.spec.target_cpu_utilization_percentage == 70

    def v2_metrics() -> Any:
        # Read raw: the controller's status (no target Deployment here) lacks
        # desiredReplicas, which this client's v2 model insists on.
        raw = client.AutoscalingV2Api(api).read_namespaced_horizontal_pod_autoscaler(
            "hpa", "default", _preload_content=False
        )
        return json.loads(raw.data)["spec"]["metrics"]

    assert v2_metrics() == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}]  # fmt: skip
    v1.patch_namespaced_horizontal_pod_autoscaler(
        "hpa", "default", {"spec": {"targetCPUUtilizationPercentage": 50}},
        _preload_content=False,
    )  # fmt: skip
    assert v2_metrics()[0]["resource"]["target"]["averageUtilization"] == 50
    listed = json.loads(
        v1.list_namespaced_horizontal_pod_autoscaler("default", _preload_content=False).data
    )
    assert listed["apiVersion"] == "autoscaling/v1"
    assert [h["spec"]["targetCPUUtilizationPercentage"] for h in listed["items"]] == [50]


def test_events_at_core_v1_and_events_k8s_io(api: Any) -> None:
    events = client.EventsV1Api(api)
    body = {
        "metadata": {"name": "ev1"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "skiff.dev/test", "reportingInstance": "test-1",
        "action": "Testing", "reason": "Tested", "note": "it works", "type": "Normal",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
    }  # fmt: skip
    events.create_namespaced_event("default", body)
    core = client.CoreV1Api(api).read_namespaced_event("ev1", "default")
    assert (core.message, core.involved_object.name) == ("it works", "p")
    again = events.read_namespaced_event("ev1", "default")
    assert (again.note, again.regarding.name) == ("it works", "p")


def test_eviction_and_binding(api: Any) -> None:
    core = client.CoreV1Api(api)
    pod = {"metadata": {"name": "evicted"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}],
                    "schedulerName": "nobody"}}  # fmt: skip
    core.create_namespaced_pod("default", pod)
    binding = {"metadata": {"name": "evicted"}, "target": {"kind": "Node", "name": "n9"}}
    core.create_namespaced_pod_binding("evicted", "default", binding, _preload_content=False)
    assert core.read_namespaced_pod("evicted", "default").spec.node_name == "n9"
    eviction = {"metadata": {"name": "evicted"}, "deleteOptions": {"gracePeriodSeconds": 0}}
    core.create_namespaced_pod_eviction("evicted", "default", eviction, _preload_content=False)
    with pytest.raises(client.ApiException) as gone:
        core.read_namespaced_pod("evicted", "default")
    assert gone.value.status == 404


def test_kubernetes_service_points_at_the_api_server(api: Any, cluster: Cluster) -> None:
    """The `kubernetes` Service in default (the first service address, port
    443) and its Endpoints (this API server), as in-cluster clients expect."""
    core = client.CoreV1Api(api)
    svc = core.read_namespaced_service("kubernetes", "default")
    assert svc.spec.cluster_ip == "10.43.0.1"
    assert [(p.name, p.port, p.target_port) for p in svc.spec.ports] == [
        ("https", 443, cluster.port)
    ]
    ep = core.read_namespaced_endpoints("kubernetes", "default")
    assert [a.ip for a in ep.subsets[0].addresses] == ["127.0.0.1"]
    assert ep.subsets[0].ports[0].port == cluster.port


AGGREGATED = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)


def _get(api: Any, path: str, **headers: str) -> Any:
    """The client's raw answer to GET path, with its own auth and TLS."""
    request = api.param_serialize("GET", path, header_params=headers,
                                  auth_settings=["BearerToken"])  # fmt: skip
    answer = api.call_api(*request)
    answer.read()
    return answer


def test_aggregated_discovery_agrees_with_the_per_version_lists(api: Any) -> None:
    """What kubectl gets from /api and /apis in one document each is what the
    legacy documents list per group/version; plain JSON still gets those."""
    assert json.loads(_get(api, "/apis", Accept="application/json").data)["kind"] == "APIGroupList"
    for root in ("/api", "/apis"):
        answer = _get(api, root, Accept=AGGREGATED)
        assert answer.headers["Content-Type"] == (
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        )
        doc = json.loads(answer.data)
        assert doc["kind"] == "APIGroupDiscoveryList" and doc["items"]
        for group in doc["items"]:
            name = group["metadata"].get("name", "")
            for version in group["versions"]:
                gv = f"{name}/{version['version']}" if name else version["version"]
                legacy = json.loads(_get(api, f"/apis/{gv}" if name else f"/api/{gv}").data)
                listed = {
                    r["name"]: (r["kind"], r["namespaced"], sorted(r["verbs"]))
                    for r in legacy["resources"]
                }
                aggregated = {}
                for r in version["resources"]:
                    scoped = r["scope"] == "Namespaced"
                    aggregated[r["resource"]] = (r["responseKind"]["kind"], scoped,
                                                 sorted(r["verbs"]))  # fmt: skip
                    for sub in r.get("subresources", []):
                        aggregated[f"{r['resource']}/{sub['subresource']}"] = (
                            sub["responseKind"]["kind"], scoped, sorted(sub["verbs"]))  # fmt: skip
                assert aggregated == listed, gv
        # An unchanged document is not sent again to a client that has it.
        again = _get(api, root, Accept=AGGREGATED, **{"If-None-Match": answer.headers["ETag"]})
        assert again.status == 304 and not again.data


def test_dry_run_on_every_verb_stores_nothing(api: Any) -> None:
    """dry_run="All" on create, replace, patch, delete (also in the body's
    DeleteOptions, where kubectl puts it), the scale and status subresources:
    every answer as Kubernetes gives it, the stored objects unchanged."""
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    core.create_namespaced_config_map("default", configmap("dry", a="1"))
    labels = {"app": "dry"}
    deployment = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="dry", labels=labels),
        spec=client.V1DeploymentSpec(
            replicas=1, selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")]),
            ),
        ),
    )  # fmt: skip
    apps.create_namespaced_deployment("default", deployment)
    before_cm = core.read_namespaced_config_map("dry", "default").to_dict()
    before_spec = apps.read_namespaced_deployment("dry", "default").spec.to_dict()

    made = core.create_namespaced_config_map("default", configmap("dry-new"), dry_run="All")
    assert made.metadata.name == "dry-new"
    changed = core.read_namespaced_config_map("dry", "default")
    changed.data = {"a": "2"}
    assert core.replace_namespaced_config_map("dry", "default", changed,
                                              dry_run="All").data == {"a": "2"}  # fmt: skip
    core.patch_namespaced_config_map("dry", "default", {"data": {"b": "2"}}, dry_run="All")
    core.delete_namespaced_config_map("dry", "default", dry_run="All")
    core.delete_namespaced_config_map(
        "dry", "default", body=client.V1DeleteOptions(dry_run=["All"]))  # fmt: skip
    core.delete_collection_namespaced_config_map("default", dry_run="All")
    scaled = apps.patch_namespaced_deployment_scale("dry", "default", {"spec": {"replicas": 5}},
                                                    dry_run="All")  # fmt: skip
    assert scaled.spec.replicas == 5
    apps.patch_namespaced_deployment_status(
        "dry", "default", {"status": {"observedGeneration": 99}}, dry_run="All")  # fmt: skip
    apps.delete_namespaced_deployment("dry", "default", dry_run="All")

    assert core.read_namespaced_config_map("dry", "default").to_dict() == before_cm
    assert apps.read_namespaced_deployment("dry", "default").spec.to_dict() == before_spec
    with pytest.raises(client.ApiException) as missing:
        core.read_namespaced_config_map("dry-new", "default")
    assert missing.value.status == 404
    with pytest.raises(client.ApiException) as refused:
        core.delete_namespaced_config_map("dry", "default", dry_run="Yes")
    assert refused.value.status == 422
    apps.delete_namespaced_deployment("dry", "default")
    core.delete_namespaced_config_map("dry", "default")
