"""Admission webhooks through the real REST API (issue 30): a
Validating/MutatingWebhookConfiguration pointing at a TLS webhook server
in this process (tests/harness/webhook_server.py), requests by kubectl and
by raw HTTP, as Kubernetes' admission webhook e2e tests check them."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from controlplane.client.errors import NotFound
from tests.harness.wait import wait_for
from tests.harness.webhook_server import Raw, WebhookServer, json_patch, review_response
from tests.integration.rest.conftest import Cluster

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import config  # noqa: E402

Object = dict[str, Any]
VWC = "ValidatingWebhookConfiguration"
MWC = "MutatingWebhookConfiguration"


@pytest.fixture(scope="module")
def api(cluster: Cluster) -> Any:
    return config.new_client_from_config(config_file=str(cluster.kubeconfig))


def call(api: Any, method: str, path: str, body: Any = None) -> tuple[int, Any, Any]:
    """(status, decoded body, headers) of a raw request with the client's auth and TLS."""
    request = api.param_serialize(method, path, body=body, header_params={
        "Content-Type": "application/json", "Accept": "application/json"},
        auth_settings=["BearerToken"])  # fmt: skip
    answer = api.call_api(*request)
    data = answer.read()
    return answer.status, json.loads(data) if data else None, answer.getheaders()


def hook(name: str, server: WebhookServer, path: str = "/", **fields: Any) -> Object:
    spec: Object = {
        "name": name,
        "clientConfig": server.client_config(path),
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "namespaceSelector": {"matchLabels": {"webhooks": "on"}},
    }  # fmt: skip
    spec.update(fields)
    return spec


@contextmanager
def installed(cluster: Cluster, kind: str, name: str, *hooks: Object) -> Iterator[None]:
    """The configuration created, and in force (the API server's cache has it)."""
    server = cluster.running.server
    server.registry.create(kind, {"metadata": {"name": name}, "webhooks": list(hooks)})
    configs = server.webhook_configs
    names = {h["name"] for h in hooks}
    held = configs.mutating if kind == MWC else configs.validating
    wait_for(lambda: names <= {h.name for h in held()}, 10, message=f"{name} in the cache")
    try:
        yield
    finally:
        server.registry.delete(kind, name)
        wait_for(lambda: not names & {h.name for h in held()}, 10, message=f"{name} gone")


@pytest.fixture(scope="module")
def namespace(cluster: Cluster) -> str:
    registry = cluster.running.server.registry
    registry.create("Namespace", {"metadata": {"name": "hooked", "labels": {"webhooks": "on"}}})

    def root_ca() -> bool:  # the controllers' own ConfigMap, made before any webhook is
        try:
            return bool(registry.get_object("ConfigMap", "kube-root-ca.crt", "hooked"))
        except NotFound:
            return False

    wait_for(root_ca, 30, message="kube-root-ca.crt in the namespace")
    return "hooked"


def cm(name: str, **labels: str) -> Object:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}  # fmt: skip


def cm_path(ns: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{ns}/configmaps" + (f"/{name}" if name else "")


def refuse_all(message: str, code: int | None = None) -> Callable[[Any], Object]:
    def answer(review: Any) -> Object:
        status: Object = {"message": message}
        if code is not None:
            status["code"] = code
        return review_response(review, False, status=status)

    return answer


def gone(cluster: Cluster, ns: str, name: str) -> None:
    try:
        cluster.running.server.registry.delete("ConfigMap", name, ns)
    except NotFound:
        pass


# -- validating ------------------------------------------------------------------------


def test_a_validating_webhook_refuses_with_its_message_and_sees_the_request(
    api: Any, cluster: Cluster, namespace: str
) -> None:
    with (
        WebhookServer(refuse_all("configmaps are frozen", 403)) as server,
        installed(cluster, VWC, "freeze", hook("freeze.example.com", server, "/validate")),
    ):
        done = cluster.kubectl("create", "configmap", "frozen", "-n", namespace,
                               "--from-literal=a=b", check=False)  # fmt: skip
        assert done.returncode != 0
        assert ('admission webhook "freeze.example.com" denied the request: '
                "configmaps are frozen") in done.stderr  # fmt: skip
        review = server.requests[-1]
        assert review["apiVersion"] == "admission.k8s.io/v1"
        request = review["request"]
        assert request["uid"] and request["operation"] == "CREATE"
        assert request["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
        assert request["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
        assert request["requestKind"] == request["kind"]
        assert (request["name"], request["namespace"]) == ("frozen", namespace)
        assert request["object"]["data"] == {"a": "b"}
        assert request["oldObject"] is None and request["dryRun"] is False
        assert request["options"]["kind"] == "CreateOptions"
        assert request["userInfo"]["username"]
        assert server.paths[-1] == "/validate?timeout=10s"
        status, body, _ = call(api, "POST", cm_path(namespace), cm("frozen"))
        assert (status, body["reason"]) == (403, "Forbidden")  # the webhook's code
        # outside the rules (another namespace, another resource): never called
        calls = len(server.requests)
        cluster.kubectl("create", "configmap", "free", "-n", "default", "--from-literal=a=b")
        assert len(server.requests) == calls
        cluster.kubectl("delete", "configmap", "free", "-n", "default")
    found = cluster.kubectl("get", "configmap", "frozen", "-n", namespace, check=False)
    assert found.returncode != 0


def test_deny_without_a_status_is_a_400_without_explanation(
    api: Any, cluster: Cluster, namespace: str
) -> None:
    with (
        WebhookServer(lambda r: review_response(r, False)) as server,
        installed(cluster, VWC, "plain-deny", hook("plain.example.com", server)),
    ):
        status, body, _ = call(api, "POST", cm_path(namespace), cm("plain"))
    assert status == 400
    assert (
        body["message"]
        == 'admission webhook "plain.example.com" denied the request without explanation'
    )


def test_update_and_delete_send_the_old_object_and_options(
    api: Any, cluster: Cluster, namespace: str
) -> None:
    gone(cluster, namespace, "watched")
    assert call(api, "POST", cm_path(namespace), cm("watched"))[0] == 201
    rule = {"operations": ["UPDATE", "DELETE"], "apiGroups": ["*"], "apiVersions": ["*"],
            "resources": ["configmaps"], "scope": "Namespaced"}  # fmt: skip
    with (
        WebhookServer(lambda r: review_response(r, True)) as server,
        installed(cluster, VWC, "ud", hook("ud.example.com", server, rules=[rule])),
    ):
        _, current, _ = call(api, "GET", cm_path(namespace, "watched"))
        current["data"] = {"k": "changed"}
        assert call(api, "PUT", cm_path(namespace, "watched"), current)[0] == 200
        update = server.requests[-1]["request"]
        assert update["operation"] == "UPDATE"
        assert update["oldObject"]["data"] == {"k": "v"}
        assert update["object"]["data"] == {"k": "changed"}
        assert update["options"]["kind"] == "UpdateOptions"
        assert (
            call(api, "DELETE", cm_path(namespace, "watched") + "?gracePeriodSeconds=0")[0] == 200
        )
        delete = server.requests[-1]["request"]
        assert delete["operation"] == "DELETE" and delete["object"] is None
        assert delete["oldObject"]["data"] == {"k": "changed"}
        assert delete["options"]["kind"] == "DeleteOptions"
        assert delete["options"]["gracePeriodSeconds"] == 0


def test_object_selector_matches_the_new_or_the_old_labels(
    api: Any, cluster: Cluster, namespace: str
) -> None:
    with WebhookServer(refuse_all("guarded")) as server, installed(
        cluster, VWC, "objsel",
        hook("objsel.example.com", server, objectSelector={"matchLabels": {"guard": "yes"}}),
    ):  # fmt: skip
        status, _, _ = call(api, "POST", cm_path(namespace), cm("unguarded"))
        assert status == 201
        status, body, _ = call(api, "POST", cm_path(namespace), cm("guarded", guard="yes"))
        assert status == 400 and "guarded" in body["message"]
    gone(cluster, namespace, "unguarded")


def test_a_namespace_is_matched_by_its_own_labels(api: Any, cluster: Cluster) -> None:
    rule = {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
            "resources": ["namespaces"]}  # fmt: skip
    with WebhookServer(refuse_all("no such team")) as server, installed(
        cluster, VWC, "teams", hook("teams.example.com", server, rules=[rule],
                                    namespaceSelector={"matchLabels": {"team": "x"}}),
    ):  # fmt: skip
        ns = {"apiVersion": "v1", "kind": "Namespace",
              "metadata": {"name": "team-x", "labels": {"team": "x"}}}  # fmt: skip
        status, body, _ = call(api, "POST", "/api/v1/namespaces", ns)
        assert status == 400 and "no such team" in body["message"]
        ns["metadata"] = {"name": "team-y", "labels": {"team": "y"}}
        assert call(api, "POST", "/api/v1/namespaces", ns)[0] == 201
        assert [r["request"]["name"] for r in server.requests] == ["team-x"]
    cluster.running.server.registry.delete("Namespace", "team-y")


def test_match_policy_equivalent_matches_deployments_by_an_extensions_rule(
    api: Any, cluster: Cluster, namespace: str
) -> None:
    rule = {"operations": ["CREATE"], "apiGroups": ["extensions"], "apiVersions": ["v1beta1"],
            "resources": ["deployments"]}  # fmt: skip
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                  "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
                      "metadata": {"labels": {"app": "web"}},
                      "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}  # fmt: skip
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    with (
        WebhookServer(refuse_all("old rule")) as server,
        installed(
            cluster,
            VWC,
            "exact",
            hook("exact.example.com", server, rules=[rule], matchPolicy="Exact"),
        ),
    ):
        assert call(api, "POST", path, deployment)[0] == 201
        assert server.requests == []
    call(api, "DELETE", f"{path}/web")
    with (
        WebhookServer(refuse_all("old rule")) as server,
        installed(cluster, VWC, "equivalent", hook("equivalent.example.com", server, rules=[rule])),
    ):
        status, body, _ = call(api, "POST", path, deployment)
        assert status == 400 and "old rule" in body["message"]
        request = server.requests[0]["request"]
        assert request["requestResource"] == {"group": "apps", "version": "v1",
                                              "resource": "deployments"}  # fmt: skip
        assert request["resource"]["group"] == "extensions"


def test_subresource_rules(api: Any, cluster: Cluster, namespace: str) -> None:
    """`pods` matches the pod only, `pods/status` its status only, `*/*` both."""
    # A scheduler of its own: the default one never writes this pod's status
    # (its writes would go to the webhooks too).
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "busybox"}]}}  # fmt: skip
    path = f"/api/v1/namespaces/{namespace}/pods"
    assert call(api, "POST", path, pod)[0] == 201

    def rule(resources: list[str]) -> list[Object]:
        return [{"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                 "resources": resources}]  # fmt: skip

    with WebhookServer(lambda r: review_response(r, True)) as server, installed(
        cluster, VWC, "subs",
        hook("main.example.com", server, "/main", rules=rule(["pods"])),
        hook("status.example.com", server, "/status", rules=rule(["pods/status"])),
        hook("all.example.com", server, "/all", rules=rule(["*/*"])),
    ):  # fmt: skip
        _, current, _ = call(api, "GET", f"{path}/p")
        current["metadata"]["labels"] = {"x": "y"}
        assert call(api, "PUT", f"{path}/p", current)[0] == 200
        main = sorted(p.split("?")[0] for p in server.paths)
        server.paths.clear()
        _, current, _ = call(api, "GET", f"{path}/p")
        current["status"]["message"] = "hello"
        assert call(api, "PUT", f"{path}/p/status", current)[0] == 200
        status = sorted(p.split("?")[0] for p in server.paths)
        assert [r["request"].get("subResource") for r in server.requests[-2:]] == ["status"] * 2
    assert main == ["/all", "/main"]
    assert status == ["/all", "/status"]
    call(api, "DELETE", f"{path}/p?gracePeriodSeconds=0")


# -- mutating --------------------------------------------------------------------------


def test_mutating_patch_then_validating_sees_it_with_warnings(
    api: Any, cluster: Cluster, namespace: str
) -> None:
    def mutate(review: Any) -> Object:
        labels = review["request"]["object"]["metadata"].get("labels")
        ops = [{"op": "add", "path": "/metadata/labels/stamped", "value": "yes"} if labels
               else {"op": "add", "path": "/metadata/labels", "value": {"stamped": "yes"}}]  # fmt: skip
        return review_response(review, True, warnings=["stamped by the webhook"], **json_patch(ops))

    def check(review: Any) -> Object:
        labels = review["request"]["object"]["metadata"].get("labels") or {}
        return review_response(review, labels.get("stamped") == "yes",
                               status={"message": "not stamped"})  # fmt: skip

    with (
        WebhookServer(mutate) as stamper,
        WebhookServer(check) as checker,
        installed(cluster, MWC, "stamp", hook("stamp.example.com", stamper)),
        installed(cluster, VWC, "check", hook("check.example.com", checker)),
    ):
        status, body, headers = call(api, "POST", cm_path(namespace), cm("stamped", a="b"))
        assert status == 201, body
        assert body["metadata"]["labels"] == {"a": "b", "stamped": "yes"}
        assert "stamped by the webhook" in headers.get("Warning", "")
        done = cluster.kubectl("create", "configmap", "stamped2", "-n", namespace)
        assert "Warning: stamped by the webhook" in done.stderr
    stored = cluster.running.server.registry.get_object("ConfigMap", "stamped", namespace)
    assert stored["metadata"]["labels"]["stamped"] == "yes"
    gone(cluster, namespace, "stamped")
    gone(cluster, namespace, "stamped2")


def test_reinvocation_if_needed(api: Any, cluster: Cluster, namespace: str) -> None:
    """a-first (IfNeeded) runs before b-second changes the object: called again."""

    def first(review: Any) -> Object:
        return review_response(review, True)

    def second(review: Any) -> Object:
        ops = [{"op": "add", "path": "/data/second", "value": "1"}]
        return review_response(review, True, **json_patch(ops))

    with (
        WebhookServer(first) as a,
        WebhookServer(second) as b,
        installed(
            cluster, MWC, "a-first", hook("first.example.com", a, reinvocationPolicy="IfNeeded")
        ),
        installed(cluster, MWC, "b-second", hook("second.example.com", b)),
    ):
        status, body, _ = call(api, "POST", cm_path(namespace), cm("reinvoked"))
        assert status == 201 and body["data"]["second"] == "1"
        assert len(b.requests) == 1
        assert len(a.requests) == 2
        assert "second" in a.requests[1]["request"]["object"]["data"]
    gone(cluster, namespace, "reinvoked")


def test_a_mutated_object_is_validated_again(api: Any, cluster: Cluster, namespace: str) -> None:
    def bad(review: Any) -> Object:
        ops = [{"op": "add", "path": "/metadata/labels", "value": {"bad key!": "x"}}]
        return review_response(review, True, **json_patch(ops))

    with (
        WebhookServer(bad) as server,
        installed(cluster, MWC, "bad", hook("bad.example.com", server)),
    ):
        status, body, _ = call(api, "POST", cm_path(namespace), cm("badlabel"))
    assert status == 422 and "metadata.labels" in body["message"]


def test_dry_run_tells_the_webhook(api: Any, cluster: Cluster, namespace: str) -> None:
    with (
        WebhookServer(lambda r: review_response(r, True)) as server,
        installed(cluster, VWC, "dry", hook("dry.example.com", server, sideEffects="NoneOnDryRun")),
    ):
        status, _, _ = call(api, "POST", cm_path(namespace) + "?dryRun=All", cm("dry"))
        assert status == 201
        request = server.requests[-1]["request"]
        assert request["dryRun"] is True and request["options"]["dryRun"] == ["All"]


# -- bad input: failurePolicy decides, the message names the webhook ----------------------

BAD_ANSWERS: dict[str, Callable[[Any], Any]] = {
    "garbage": lambda r: Raw(200, b"<html>not json"),
    "error": lambda r: Raw(500, b"oops"),
    "wrong-uid": lambda r: {**review_response(r, True),
                            "response": {"uid": "not-the-one", "allowed": True}},
    "wrong-kind": lambda r: {**review_response(r, True), "kind": "Nope"},
    "bad-patch": lambda r: review_response(r, True, **json_patch(
        [{"op": "replace", "path": "/nothing/here", "value": 1}])),
    "patch-not-base64": lambda r: review_response(r, True, patchType="JSONPatch", patch="%%"),
}  # fmt: skip
EXPECTED = {
    "garbage": "received invalid webhook response: the response is not JSON",
    "error": "status code 500",
    "wrong-uid": 'expected response.uid="',
    "wrong-kind": "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview",
    "bad-patch": "the patch could not be applied",
    "patch-not-base64": "the patch is not base64",
}


@pytest.mark.parametrize("bad", sorted(BAD_ANSWERS))
def test_a_bad_answer_fails_closed_or_open_by_failure_policy(
    api: Any, cluster: Cluster, namespace: str, bad: str
) -> None:
    name = f"{bad}.example.com"
    with WebhookServer(BAD_ANSWERS[bad]) as server:
        with installed(cluster, MWC, bad, hook(name, server)):
            status, body, _ = call(api, "POST", cm_path(namespace), cm(f"fail-{bad}"))
        assert status == 500, body
        assert body["message"].startswith(
            f'Internal error occurred: failed calling webhook "{name}": '
        )
        assert EXPECTED[bad] in body["message"]
        with installed(cluster, MWC, bad, hook(name, server, failurePolicy="Ignore")):
            status, body, _ = call(api, "POST", cm_path(namespace), cm(f"ignored-{bad}"))
        assert status == 201, body
        assert "fail-" not in json.dumps(body["metadata"].get("labels") or {})
    gone(cluster, namespace, f"ignored-{bad}")


def test_a_validating_webhook_may_not_patch(api: Any, cluster: Cluster, namespace: str) -> None:
    ops = [{"op": "add", "path": "/data/x", "value": "1"}]
    with (
        WebhookServer(lambda r: review_response(r, True, **json_patch(ops))) as server,
        installed(cluster, VWC, "patcher", hook("patcher.example.com", server)),
    ):
        status, body, _ = call(api, "POST", cm_path(namespace), cm("patched"))
    assert status == 500
    assert body["message"] == ('Internal error occurred: failed calling webhook "patcher.example.com": '
                               "received invalid webhook response: validating webhooks may not return patches")  # fmt: skip


def test_a_down_webhook_names_itself_and_ignore_lets_the_request_through(
    api: Any, cluster: Cluster, namespace: str
) -> None:
    with WebhookServer(lambda r: review_response(r, True)) as server:
        config = server.client_config("/")
    down = {"name": "down.example.com", **hook("down.example.com", server), "clientConfig": config}
    with installed(cluster, VWC, "down", down):
        status, body, _ = call(api, "POST", cm_path(namespace), cm("down"))
    assert status == 500
    assert body["message"].startswith('Internal error occurred: failed calling webhook "down.example.com": '
                                      'failed to call webhook: Post "https://127.0.0.1:')  # fmt: skip
    assert "connection refused" in body["message"]
    with installed(cluster, VWC, "down", {**down, "failurePolicy": "Ignore"}):
        assert call(api, "POST", cm_path(namespace), cm("down"))[0] == 201
    gone(cluster, namespace, "down")


def test_a_slow_webhook_costs_at_most_its_timeout(
    api: Any, cluster: Cluster, namespace: str
) -> None:
    with (
        WebhookServer(lambda r: Raw(200, b"{}", delay=25)) as server,
        installed(cluster, VWC, "slow", hook("slow.example.com", server, timeoutSeconds=2)),
    ):
        start = time.monotonic()
        status, body, _ = call(api, "POST", cm_path(namespace), cm("slow"))
        elapsed = time.monotonic() - start
    assert status == 500 and "context deadline exceeded" in body["message"]
    assert 'failed calling webhook "slow.example.com"' in body["message"]
    assert elapsed < 10  # the webhook's 2 s, not its 25 s


def test_a_slow_webhook_holds_up_no_other_request(
    api: Any, cluster: Cluster, namespace: str
) -> None:
    """While a create waits on a slow webhook, the API server goes on
    serving: reads, and writes the webhook does not match (another
    namespace), answer as fast as ever (no loop or store lock held)."""
    outcome: list[int] = []
    with (
        WebhookServer(lambda r: Raw(200, b"{}", delay=25)) as server,
        installed(cluster, VWC, "slow", hook("slow.example.com", server, timeoutSeconds=10)),
    ):
        slow = threading.Thread(
            target=lambda: outcome.append(call(api, "POST", cm_path(namespace), cm("held"))[0])
        )
        slow.start()
        try:
            wait_for(lambda: server.requests, timeout=10, message="the slow webhook called")
            for method, path, body in (
                ("GET", f"/api/v1/namespaces/{namespace}", None),
                ("GET", cm_path(namespace), None),
                ("POST", cm_path("default"), cm("beside-the-slow-one")),
                ("DELETE", cm_path("default", "beside-the-slow-one"), None),
            ):
                start = time.monotonic()
                status = call(api, method, path, body)[0]
                assert status in (200, 201) and time.monotonic() - start < 3, (method, path, status)
            assert slow.is_alive()  # all of it happened while the create was held
        finally:
            slow.join(30)
    assert outcome == [500]  # the create itself: failurePolicy Fail after the 10 s


def test_configurations_themselves_are_never_sent_to_webhooks(api: Any, cluster: Cluster) -> None:
    rule = {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}
    with WebhookServer(refuse_all("everything")) as server, installed(
        cluster, VWC, "everything", hook("everything.example.com", server, rules=[rule],
                                         namespaceSelector={})
    ):  # fmt: skip
        other = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": VWC,
                 "metadata": {"name": "other"}, "webhooks": []}  # fmt: skip
        path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
        assert call(api, "POST", path, other)[0] == 201
        assert call(api, "DELETE", f"{path}/other")[0] == 200
        # (the components' own writes meanwhile, a Lease renewal say, do reach it)
        sent = [r["request"]["resource"]["resource"] for r in server.requests]
        assert not [r for r in sent if r.endswith("webhookconfigurations")], sent


def test_warnings_and_audit_annotations_are_recorded() -> None:
    """auditAnnotations land in the request's audit event prefixed by the webhook."""
    from controlplane.apiserver import admission_context
    from controlplane.apiserver.webhooks.configs import Hook
    from controlplane.apiserver.webhooks.dispatcher import WebhookAdmission
    from controlplane.apiserver.webhooks.review import Response

    with admission_context.recording() as recorded:
        WebhookAdmission._record(Hook("c", "x.example.com", {}, False),
                                 Response(True, warnings=["w"], audit_annotations={"k": "v"}))  # fmt: skip
    assert recorded.warnings == ["w"]
    assert recorded.annotations == {"x.example.com/k": "v"}


def test_connect_exec_goes_to_webhooks_with_its_options(
    api: Any, cluster: Cluster, namespace: str
) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "execme"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}  # fmt: skip
    path = f"/api/v1/namespaces/{namespace}/pods"
    assert call(api, "POST", path, pod)[0] == 201
    rule = {"operations": ["CONNECT"], "apiGroups": [""], "apiVersions": ["v1"],
            "resources": ["pods/exec"]}  # fmt: skip
    with (
        WebhookServer(refuse_all("no exec here", 403)) as server,
        installed(cluster, VWC, "noexec", hook("noexec.example.com", server, rules=[rule])),
    ):
        request = api.param_serialize(
            "POST", f"{path}/execme/exec?command=ls&command=-l&stdout=true&container=c",
            header_params={"Connection": "Upgrade", "Upgrade": "SPDY/3.1"},
            auth_settings=["BearerToken"],
        )  # fmt: skip
        answer = api.call_api(*request)
        body = json.loads(answer.read())
    assert answer.status == 403
    assert (
        body["message"] == 'admission webhook "noexec.example.com" denied the request: no exec here'
    )
    seen = server.requests[0]["request"]
    assert (seen["operation"], seen["subResource"]) == ("CONNECT", "exec")
    assert seen["kind"] == {"group": "", "version": "v1", "kind": "PodExecOptions"}
    assert seen["object"]["command"] == ["ls", "-l"] and seen["object"]["container"] == "c"
    call(api, "DELETE", f"{path}/execme?gracePeriodSeconds=0")


def test_connect_portforward_webhooks_see_every_port(
    api: Any, cluster: Cluster, namespace: str
) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "fwd"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}  # fmt: skip
    path = f"/api/v1/namespaces/{namespace}/pods"
    assert call(api, "POST", path, pod)[0] == 201
    rule = {"operations": ["CONNECT"], "apiGroups": [""], "apiVersions": ["v1"],
            "resources": ["pods/portforward"]}  # fmt: skip

    def connect(query: str) -> tuple[int, Any]:
        request = api.param_serialize(
            "POST", f"{path}/fwd/portforward?{query}",
            header_params={"Connection": "Upgrade", "Upgrade": "SPDY/3.1"},
            auth_settings=["BearerToken"],
        )  # fmt: skip
        answer = api.call_api(*request)
        return answer.status, json.loads(answer.read())

    with (
        WebhookServer(refuse_all("no forwarding", 403)) as server,
        installed(cluster, VWC, "nofwd", hook("nofwd.example.com", server, rules=[rule])),
    ):
        assert connect("ports=1234,1235&ports=8080")[0] == 403
        status, body = connect("ports=1234,x")
        assert len(server.requests) == 1  # a malformed port never reaches a webhook
    seen = server.requests[0]["request"]
    assert seen["kind"] == {"group": "", "version": "v1", "kind": "PodPortForwardOptions"}
    assert seen["object"]["ports"] == [1234, 1235, 8080]
    assert (status, body["reason"]) == (400, "BadRequest")
    assert body["message"] == (
        'ports: cannot convert to []int32: strconv.ParseUint: parsing "x": invalid syntax'
    )
    call(api, "DELETE", f"{path}/fwd?gracePeriodSeconds=0")


def test_a_v1beta1_only_webhook_gets_and_answers_v1beta1(
    api: Any, cluster: Cluster, namespace: str
) -> None:
    def answer(review: Any) -> Object:
        return {**review_response(review, False, status={"message": "old review"}),
                "apiVersion": "admission.k8s.io/v1beta1"}  # fmt: skip

    with (
        WebhookServer(answer) as server,
        installed(
            cluster,
            VWC,
            "beta",
            hook("beta.example.com", server, admissionReviewVersions=["v1beta1"]),
        ),
    ):
        status, body, _ = call(api, "POST", cm_path(namespace), cm("beta"))
    assert server.requests[0]["apiVersion"] == "admission.k8s.io/v1beta1"
    assert status == 400 and body["message"].endswith("denied the request: old review")
