"""What clients see of skiff is what Kubernetes would show them (issue 28's
later items), through kubectl 1.33 and the official Python client against
one real control plane: a table for one object, Kubernetes' error texts and
causes, impersonation, `can-i --list`, metadata-only reads, booleans as Go
parses them, a JSON patch testing the resourceVersion (kopf's finalizer
patch), the limits on annotations and Secrets, base64 with line breaks,
status defaults, the not-ready taint of a new Node, complete nodeInfo, the
401 body and create conflicts naming the object."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.harness.kubectl import NEWEST
from tests.integration.rest.conftest import Cluster

kubernetes = pytest.importorskip("kubernetes")
client: Any = kubernetes.client
config: Any = kubernetes.config
ApiException: Any = kubernetes.client.exceptions.ApiException

KUBECTL = NEWEST
pytestmark = pytest.mark.skipif(not KUBECTL.exists(), reason=f"{KUBECTL} is not installed")


def kubectl(cluster: Cluster, *args: str, check: bool = True,
            input: str | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    done = subprocess.run([str(KUBECTL), *args], capture_output=True, text=True, timeout=90,
                          input=input, env=cluster.env())  # fmt: skip
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {done.returncode}\n{done.stderr}")
    return done


@pytest.fixture(scope="module")
def api(cluster: Cluster) -> Any:
    return config.new_client_from_config(config_file=str(cluster.kubeconfig))


def raw(api: Any, method: str, path: str, body: Any = None, **headers: str) -> tuple[int, Any]:
    """The status and decoded body of a request made with the client's auth."""
    request = api.param_serialize(method, path, header_params=headers, body=body,
                                  auth_settings=["BearerToken"])  # fmt: skip
    answer = api.call_api(*request)
    data = answer.read()
    text = data.decode() if isinstance(data, bytes) else str(data)
    try:
        return answer.status, json.loads(text)
    except ValueError:
        return answer.status, text


BAD_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: -1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: busybox}]}
"""


def test_get_one_object_prints_the_kinds_columns(cluster: Cluster) -> None:
    kubectl(cluster, "create", "deployment", "single", "--image=busybox", "--replicas=0")
    lines = kubectl(cluster, "get", "deploy", "single", "-o", "wide").stdout.splitlines()
    assert lines[0].split()[:5] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert "SELECTOR" in lines[0] and lines[1].split()[1] == "0/0"
    header = kubectl(cluster, "get", "clusterrole", "admin").stdout.splitlines()[0]
    assert header.split() == ["NAME", "CREATED", "AT"]


def test_invalid_object_reads_as_kubernetes_writes_it(cluster: Cluster, api: Any) -> None:
    done = kubectl(cluster, "apply", "-f", "-", input=BAD_DEPLOYMENT, check=False)
    assert done.returncode != 0
    assert ('The Deployment "web" is invalid: spec.replicas: Invalid value: -1: '
            "must be greater than or equal to 0") in done.stderr  # fmt: skip
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}}
    status, doc = raw(api, "POST", "/api/v1/namespaces/default/configmaps", body)
    assert status == 422 and doc["reason"] == "Invalid"
    assert doc["message"].startswith('ConfigMap "Bad_Name" is invalid: metadata.name: Invalid '
                                     'value: "Bad_Name": a lowercase RFC 1123 subdomain')  # fmt: skip
    assert doc["details"]["name"] == "Bad_Name" and doc["details"]["kind"] == "ConfigMap"
    cause = doc["details"]["causes"][0]
    assert cause["reason"] == "FieldValueInvalid" and cause["field"] == "metadata.name"
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c"}]}}  # fmt: skip
    status, doc = raw(api, "POST", "/api/v1/namespaces/default/pods", body)
    assert (
        status == 422
        and {
            "reason": "FieldValueRequired",
            "message": "Required value",
            "field": "spec.containers[0].image",
        }
        in doc["details"]["causes"]
    )


def test_create_conflict_names_the_object_and_401_says_unauthorized(
    cluster: Cluster, api: Any
) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "twice"}}
    assert raw(api, "POST", "/api/v1/namespaces/default/configmaps", body)[0] == 201
    status, doc = raw(api, "POST", "/api/v1/namespaces/default/configmaps", body)
    assert status == 409 and doc["reason"] == "AlreadyExists"
    assert doc["details"] == {"name": "twice", "kind": "configmaps"}
    # metav1.Status' order and Go's closing newline: the Python client's e2e
    # tests compare the bytes.
    with pytest.raises(ApiException) as conflict:
        client.CoreV1Api(api).create_namespaced_config_map("default", body)
    assert conflict.value.body.endswith('"code":409}\n'), conflict.value.body
    assert list(doc) == ["kind", "apiVersion", "metadata", "status", "message", "reason",
                         "details", "code"]  # fmt: skip
    status, doc = raw(api, "GET", "/api/v1/pods", Authorization="Bearer nonsense")
    assert status == 401 and doc["message"] == "Unauthorized"


def test_impersonation_and_rules_review(cluster: Cluster) -> None:
    who = json.loads(kubectl(cluster, "auth", "whoami", "-o", "json", "--as=nobody",
                             "--as-group=devs").stdout)  # fmt: skip
    assert who["status"]["userInfo"]["username"] == "nobody"
    assert who["status"]["userInfo"]["groups"] == ["devs", "system:authenticated"]
    refused = kubectl(cluster, "get", "pods", "--as=nobody", check=False)
    assert refused.returncode != 0 and ('pods is forbidden: User "nobody" cannot list resource '
                                        '"pods" in API group ""') in refused.stderr  # fmt: skip
    assert kubectl(cluster, "auth", "can-i", "get", "pods", "--as=nobody",
                   check=False).stdout.strip() == "no"  # fmt: skip
    sa = "system:serviceaccount:default:default"
    assert kubectl(cluster, "auth", "can-i", "create", "selfsubjectaccessreviews",
                   f"--as={sa}").stdout.strip() == "yes"  # fmt: skip
    listed = kubectl(cluster, "auth", "can-i", "--list").stdout
    assert "Resources" in listed and "*.*" in listed
    basic = kubectl(cluster, "auth", "can-i", "--list", "--as=nobody").stdout
    assert "selfsubjectrulesreviews.authorization.k8s.io" in basic and "*.*" not in basic


def test_impersonating_needs_the_impersonate_verb(cluster: Cluster, api: Any) -> None:
    kubectl(cluster, "create", "clusterrole", "impersonator", "--verb=impersonate",
            "--resource=users", "--resource-name=bob")  # fmt: skip
    kubectl(cluster, "create", "clusterrolebinding", "alice-impersonates", "--user=alice",
            "--clusterrole=impersonator")  # fmt: skip
    who = json.loads(kubectl(cluster, "auth", "whoami", "-o", "json", "--as=bob").stdout)
    assert who["status"]["userInfo"]["username"] == "bob"
    status, doc = raw(api, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                      {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
                      **{"Impersonate-User": "bob"})  # fmt: skip
    assert status == 201
    # alice (impersonated by the admin) may become bob, not carol.
    request = {"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
               "spec": {"user": "alice", "resourceAttributes": {
                   "verb": "impersonate", "resource": "users", "name": "bob"}}}  # fmt: skip
    status, doc = raw(api, "POST",
                      "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
                      request)  # fmt: skip
    assert status == 201 and doc["status"]["allowed"] is True
    assert doc["spec"]["resourceAttributes"]["namespace"] == "default"
    status, doc = raw(api, "GET", "/api/v1/namespaces", **{"Impersonate-User": "carol"})
    assert status == 403


def test_metadata_only_reads(api: Any) -> None:
    meta = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
    status, doc = raw(api, "GET", "/api/v1/namespaces", Accept=meta)
    assert status == 200 and doc["kind"] == "PartialObjectMetadataList"
    assert doc["items"][0]["kind"] == "PartialObjectMetadata" and "spec" not in doc["items"][0]
    one = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
    status, doc = raw(api, "GET", "/api/v1/namespaces/default", Accept=one)
    assert doc["kind"] == "PartialObjectMetadata" and doc["metadata"]["name"] == "default"


def test_booleans_as_go_parses_them_and_a_trailing_comma(api: Any) -> None:
    core = client.CoreV1Api(api)
    # The client sends watch=True: a watch, not a list.
    status, text = raw(api, "GET", "/api/v1/namespaces?watch=True&timeoutSeconds=1")
    assert status == 200 and isinstance(text, str) and '"type":"ADDED"' in text
    status, doc = raw(api, "GET", "/api/v1/namespaces?watch=maybe")
    assert status == 400 and "watch" in doc["message"]
    found = core.list_namespace(field_selector="metadata.name=default,")
    assert [n.metadata.name for n in found.items] == ["default"]


def test_json_patch_testing_the_resource_version(api: Any) -> None:
    core = client.CoreV1Api(api)
    made = core.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="kopf")))  # fmt: skip
    rv = made.metadata.resource_version
    patch = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
        {"op": "add", "path": "/metadata/finalizers", "value": ["kopf.zalando.org/x"]},
    ]
    got = core.patch_namespaced_config_map("kopf", "default", patch)
    assert got.metadata.finalizers == ["kopf.zalando.org/x"]
    with pytest.raises(ApiException) as stale:  # the same test again: the version moved on
        core.patch_namespaced_config_map("kopf", "default", patch)
    assert stale.value.status in (409, 422)
    core.patch_namespaced_config_map(
        "kopf", "default", [{"op": "remove", "path": "/metadata/finalizers"}]
    )


def test_invalid_patches_read_as_kubernetes_writes_them(cluster: Cluster, api: Any) -> None:
    """kubectl's own test-cmd: a strategic merge patch making labels a string
    says `cannot restore map from string`; a JSON patch that does not apply
    is Kubernetes' generic 422 (no kind, no name, no causes); a JSON patch
    that is not an array is the decoder's 400."""
    kubectl(cluster, "create", "configmap", "patched", "--from-literal=a=1")
    done = kubectl(cluster, "patch", "configmap", "patched", "-p",
                   '{"metadata":{"labels":"invalid"}}', check=False)  # fmt: skip
    assert done.returncode != 0
    assert (
        "The request is invalid: patch: Invalid value: "
        '"map[metadata:map[labels:invalid]]": cannot restore map from string'
    ) in done.stderr
    done = kubectl(cluster, "patch", "configmap", "patched", "--type=merge", "-p",
                   '{"metadata":{"labels":"invalid"}}', check=False)  # fmt: skip
    assert (
        "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.labels of "
        "type map[string]string"
    ) in done.stderr and "patch: Invalid value:" in done.stderr
    path = "/api/v1/namespaces/default/configmaps/patched"
    status, doc = raw(api, "PATCH", path, {"data": ["x"]},
                      **{"Content-Type": "application/strategic-merge-patch+json"})  # fmt: skip
    assert status == 422 and doc["message"] == (
        ' "" is invalid: patch: Invalid value: "map[data:[x]]": cannot restore map from slice'
    )
    assert doc["details"] == {
        "causes": [
            {
                "reason": "FieldValueInvalid",
                "field": "patch",
                "message": 'Invalid value: "map[data:[x]]": cannot restore map from slice',
            }
        ]
    }
    done = kubectl(cluster, "patch", "configmap", "patched", "--type=json",
                   "-p", '[{"op":"test","path":"/data/a","value":"2"}]', check=False)  # fmt: skip
    assert done.returncode != 0
    assert ("The request is invalid: the server rejected our request due to an error in our "
            "request") in done.stderr  # fmt: skip
    status, doc = raw(api, "PATCH", path, [{"op": "remove", "path": "/data/zz"}],
                      **{"Content-Type": "application/json-patch+json"})  # fmt: skip
    assert (status, doc["reason"], doc.get("details", {})) == (422, "Invalid", {})
    done = kubectl(cluster, "patch", "configmap", "patched", "--type=json",
                   "-p", '{"op":"add"}', check=False)  # fmt: skip
    assert ("Error from server (BadRequest): json: cannot unmarshal object into Go value of "
            "type jsonpatch.Patch") in done.stderr  # fmt: skip
    assert kubectl(cluster, "get", "cm", "patched", "-o", "jsonpath={.data.a}").stdout == "1"


def test_explain_pod_status_fields(cluster: Cluster, api: Any) -> None:
    """PodStatus is described field by field in both OpenAPI documents, with
    Kubernetes' descriptions: `kubectl explain po.status.message` finds it."""
    done = kubectl(cluster, "explain", "po.status.message")
    assert "FIELD: message <string>" in done.stdout, done.stdout
    assert "A human readable message indicating details about why the pod is in" in done.stdout
    status, doc = raw(api, "GET", "/openapi/v2")
    assert status == 200
    reason = doc["definitions"]["io.k8s.api.core.v1.PodStatus"]["properties"]["reason"]
    assert reason["description"].startswith("A brief CamelCase message")


def test_limits_and_base64_line_breaks(api: Any) -> None:
    core = client.CoreV1Api(api)
    big = client.V1ConfigMap(metadata=client.V1ObjectMeta(
        name="annotated", annotations={"a": "x" * (256 * 1024)}))  # fmt: skip
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_config_map("default", big)
    assert "metadata.annotations: Too long: must have at most 262144 bytes" in refused.value.body
    huge = client.V1Secret(metadata=client.V1ObjectMeta(name="huge"),
                           data={"k": base64.b64encode(b"x" * (1024 * 1024 + 1)).decode()})  # fmt: skip
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_secret("default", huge)
    assert "data: Too long: must have at most 1048576 bytes" in refused.value.body
    wrapped = base64.encodebytes(b"y" * 100).decode()  # 76-column lines, as base64(1) writes
    assert "\n" in wrapped.strip()
    status, doc = raw(api, "POST", "/api/v1/namespaces/default/secrets", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "wrapped"},
        "data": {"k": wrapped}})  # fmt: skip
    assert status == 201 and doc["data"]["k"] == base64.b64encode(b"y" * 100).decode()


def test_new_objects_carry_their_zero_status(api: Any) -> None:
    core = client.CoreV1Api(api)
    svc = core.create_namespaced_service("default", client.V1Service(
        metadata=client.V1ObjectMeta(name="zero"),
        spec=client.V1ServiceSpec(ports=[client.V1ServicePort(port=80)])))  # fmt: skip
    assert svc.status.load_balancer is not None
    status, doc = raw(api, "POST", "/apis/apps/v1/namespaces/default/statefulsets", {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "zero"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"a": "b"}}, "serviceName": "zero",
                 "template": {"metadata": {"labels": {"a": "b"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}}}})  # fmt: skip
    assert status == 201 and doc["status"] == {"replicas": 0, "availableReplicas": 0}
    # The client's model requires an RC's status.replicas: it reads the create's answer.
    rc = core.create_namespaced_replication_controller(
        "default",
        client.V1ReplicationController(
            metadata=client.V1ObjectMeta(name="zero"),
            spec=client.V1ReplicationControllerSpec(
                replicas=0,
                selector={"a": "b"},
                template=client.V1PodTemplateSpec(
                    metadata=client.V1ObjectMeta(labels={"a": "b"}),
                    spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="i")]),
                ),
            ),
        ),
    )
    assert rc.status.replicas == 0


def test_a_new_node_is_tainted_not_ready_and_reads_in_the_client(api: Any) -> None:
    core = client.CoreV1Api(api)
    # The taint as the create stored it: the node lifecycle controller may
    # take it off at once, as Kubernetes' does for a node with no Ready
    # condition (its NoSchedule pass keeps only the taints conditions ask for).
    created = core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name="fresh")))
    taints = [(t.key, t.effect) for t in created.spec.taints]
    assert ("node.kubernetes.io/not-ready", "NoSchedule") in taints
    core.read_node("fresh")  # the client's model requires every nodeInfo field
    _, doc = raw(api, "POST", "/api/v1/nodes", {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "reported"},
        "status": {"nodeInfo": {"kubeletVersion": "v1.33.0"}}})  # fmt: skip
    info = doc["status"]["nodeInfo"]
    assert info["kubeletVersion"] == "v1.33.0" and info["systemUUID"] == ""
    assert core.read_node("reported").status.node_info.kube_proxy_version == ""
    core.delete_node("fresh")
    core.delete_node("reported")


def test_volume_without_a_source_is_an_empty_dir(api: Any) -> None:
    status, doc = raw(api, "POST", "/api/v1/namespaces/default/pods?dryRun=All", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "vol"},
        "spec": {"volumes": [{"name": "scratch"}],
                 "containers": [{"name": "c", "image": "i"}]}})  # fmt: skip
    assert status == 201 and doc["spec"]["volumes"][0] == {"name": "scratch", "emptyDir": {}}


def test_skiff_user_create_writes_a_kubeconfig_kubectl_reads(
    cluster: Cluster, tmp_path: Path
) -> None:
    from controlplane.usercmd import main as skiff_user

    conf = tmp_path / "dana.conf"
    data_dir = cluster.kubeconfig.parent
    assert skiff_user(["create", "dana", "--group", "system:masters", "--data-dir",
                       str(data_dir), "-o", str(conf)]) == 0  # fmt: skip
    done = subprocess.run([str(KUBECTL), "auth", "whoami", "-o", "json"], capture_output=True,
                          text=True, timeout=60, env=cluster.env(KUBECONFIG=str(conf)))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"]["userInfo"]["username"] == "dana"


def test_server_side_apply_after_client_side_apply_migrates(cluster: Cluster) -> None:
    """`kubectl apply --server-side` on what `kubectl apply` made takes over
    the fields of the last-applied configuration (no conflict with
    kubectl-client-side-apply), kubectl migrates their ownership, and the
    annotation keeps up, so client-side apply works again afterwards."""
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: moved}\ndata: {a: 'A'}\n"
    kubectl(cluster, "apply", "-f", "-", input=manifest.replace("A", "1"))
    diff = kubectl(cluster, "diff", "--server-side", "-f", "-", input=manifest.replace("A", "2"),
                   check=False)  # fmt: skip
    assert diff.returncode == 1 and '+  a: "2"' in diff.stdout, diff.stderr
    out = kubectl(cluster, "apply", "--server-side", "-f", "-", input=manifest.replace("A", "2"))
    assert "serverside-applied" in out.stdout
    got = json.loads(kubectl(cluster, "get", "cm", "moved", "-o", "json",
                             "--show-managed-fields").stdout)  # fmt: skip
    assert got["data"] == {"a": "2"}
    managers = {e["manager"] for e in got["metadata"]["managedFields"]}
    assert "kubectl-client-side-apply" not in managers and "kubectl" in managers
    last = json.loads(got["metadata"]["annotations"][
        "kubectl.kubernetes.io/last-applied-configuration"])  # fmt: skip
    assert last["data"] == {"a": "2"}
    kubectl(cluster, "apply", "-f", "-", input=manifest.replace("A", "3"))
    assert json.loads(kubectl(cluster, "get", "cm", "moved", "-o", "json").stdout)["data"] == {
        "a": "3"
    }


CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"""


def test_a_deprecated_crd_version_warns(cluster: Cluster) -> None:
    kubectl(cluster, "apply", "-f", "-", input=CRD)
    kubectl(cluster, "wait", "--for=condition=Established", "crd/widgets.example.com",
            "--timeout=30s")  # fmt: skip
    old = "apiVersion: example.com/v1beta1\nkind: Widget\nmetadata: {name: w}\n"
    made = kubectl(cluster, "create", "-f", "-", input=old)
    assert "Warning: example.com/v1beta1 Widget is deprecated" in made.stderr
    current = kubectl(cluster, "get", "widgets.v1.example.com", "w")
    assert "deprecated" not in current.stderr


def test_namespaces_carry_their_name_label(cluster: Cluster) -> None:
    """Kubernetes labels every Namespace `kubernetes.io/metadata.name: <name>`
    on each write, so namespaceSelectors (NetworkPolicy, webhooks) can pick
    one by name; a client can neither change nor remove it."""

    def labels(name: str) -> dict[str, str]:
        out = kubectl(cluster, "get", "namespace", name, "-o", "json").stdout
        return dict(json.loads(out)["metadata"].get("labels") or {})

    kubectl(cluster, "create", "namespace", "fid-label")
    try:
        assert labels("fid-label")["kubernetes.io/metadata.name"] == "fid-label"
        kubectl(cluster, "label", "namespace", "fid-label", "kubernetes.io/metadata.name-")
        kubectl(cluster, "label", "namespace", "fid-label", "team=a")
        assert labels("fid-label") == {"kubernetes.io/metadata.name": "fid-label", "team": "a"}
        kubectl(cluster, "label", "--overwrite", "namespace", "fid-label",
                "kubernetes.io/metadata.name=other")  # fmt: skip
        assert labels("fid-label")["kubernetes.io/metadata.name"] == "fid-label"
        names = kubectl(cluster, "get", "namespaces", "-l", "kubernetes.io/metadata.name=default",
                        "-o", "name").stdout.split()  # fmt: skip
        assert names == ["namespace/default"]
    finally:
        kubectl(cluster, "delete", "namespace", "fid-label", "--wait=false", check=False)
