"""The dispatcher's decisions that need no server: dry runs against
webhooks with side effects, matchConditions without a CEL engine, and the
configurations refusing matchConditions when written."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api import validation
from controlplane.apiserver.auth import SYSTEM
from controlplane.apiserver.webhooks import match_conditions
from controlplane.apiserver.webhooks.client import WebhookClient
from controlplane.apiserver.webhooks.configs import PREFIXES, WebhookConfigs
from controlplane.apiserver.webhooks.dispatcher import WebhookAdmission
from controlplane.apiserver.webhooks.matching import Resource
from controlplane.apiserver.webhooks.review import Request
from controlplane.client.errors import BadRequest, InternalError
from controlplane.storage.interface import Event, EventType

Object = dict[str, Any]


class NoCalls(WebhookClient):
    def post(self, client_config: Object, body: bytes, timeout: float) -> bytes:
        raise AssertionError("no webhook may be called")


def admission(kind: str, **fields: Any) -> WebhookAdmission:
    configs = WebhookConfigs()
    spec = {"name": "x.example.com", "clientConfig": {"url": "https://127.0.0.1:1/"},
            "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
                       "resources": ["*"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"], **fields}  # fmt: skip
    prefix = next(p for p, k in PREFIXES.items() if k == kind)
    configs.on_event(Event(EventType.CREATE, f"{prefix}c",
                           _json({"metadata": {"name": "c"}, "webhooks": [spec]}), 1))  # fmt: skip
    return WebhookAdmission(configs, NoCalls(), lambda ns: {})


def _json(obj: Object) -> bytes:
    from controlplane.api import jsoncodec

    return jsoncodec.dumps(obj)


def request(dry_run: bool = False) -> Request:
    return Request("CREATE", "ConfigMap", Resource("", "v1", "configmaps", "", "default", True),
                   "c", SYSTEM, {"metadata": {"name": "c"}}, None, dry_run)  # fmt: skip


@pytest.mark.parametrize("side_effects", ["Unknown", "Some"])
def test_a_dry_run_is_refused_by_a_webhook_with_side_effects(side_effects: str) -> None:
    hooks = admission("ValidatingWebhookConfiguration", sideEffects=side_effects)
    with pytest.raises(
        BadRequest, match=r'admission webhook "x\.example\.com" does not support dry run'
    ):
        hooks.validate_request(request(dry_run=True))
    hooks = admission("MutatingWebhookConfiguration", sideEffects=side_effects)
    with pytest.raises(BadRequest, match="does not support dry run"):
        hooks.mutate_request(request(dry_run=True))


@pytest.mark.skipif(match_conditions.available(), reason="the CEL engine is built in")
def test_match_conditions_without_a_cel_engine() -> None:
    conditions = [{"name": "only-foo", "expression": "object.metadata.name == 'foo'"}]
    hooks = admission("ValidatingWebhookConfiguration", matchConditions=conditions)
    with pytest.raises(
        InternalError, match=r'failed calling webhook "x\.example\.com": matchConditions: no CEL'
    ):
        hooks.validate_request(request())
    ignored = admission("ValidatingWebhookConfiguration", matchConditions=conditions,
                        failurePolicy="Ignore")  # fmt: skip
    ignored.validate_request(request())  # skipped, never called


@pytest.mark.skipif(match_conditions.available(), reason="the CEL engine is built in")
def test_configurations_with_match_conditions_are_refused_without_a_cel_engine() -> None:
    obj = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
           "metadata": {"name": "c"}, "webhooks": [{
               "name": "x.example.com", "clientConfig": {"url": "https://h/"},
               "sideEffects": "None", "admissionReviewVersions": ["v1"],
               "matchConditions": [{"name": "a", "expression": "true"}]}]}  # fmt: skip
    problems = validation.validate("ValidatingWebhookConfiguration", obj, None)
    assert any("webhooks[0].matchConditions" in p and "CEL engine" in p for p in problems)


class Allow(WebhookClient):
    """Answers every review allowed, counting the calls."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def post(self, client_config: Object, body: bytes, timeout: float) -> bytes:
        from controlplane.api import jsoncodec

        self.calls += 1
        uid = jsoncodec.loads(body)["request"]["uid"]
        return jsoncodec.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                "response": {"uid": uid, "allowed": True}})  # fmt: skip


def test_match_conditions_with_the_cel_engine() -> None:
    """With the CEL engine built in (the cel part's), a false condition skips
    the webhook and a true one calls it."""
    pytest.importorskip("controlplane.api.cel.match_conditions")
    hooks = admission("ValidatingWebhookConfiguration", matchConditions=[
        {"name": "only-foo", "expression": "object.metadata.name == 'foo'"}])  # fmt: skip
    client = Allow()
    hooks.client = client
    hooks.validate_request(request())  # named "c": not matched
    assert client.calls == 0
    named_foo = request()
    named_foo.obj = {"metadata": {"name": "foo"}}
    hooks.validate_request(named_foo)
    assert client.calls == 1


def test_configurations_check_match_conditions_with_the_cel_engine() -> None:
    pytest.importorskip("controlplane.api.cel.match_conditions")
    obj = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
           "metadata": {"name": "c"}, "webhooks": [{
               "name": "x.example.com", "clientConfig": {"url": "https://h/"},
               "sideEffects": "None", "admissionReviewVersions": ["v1"],
               "matchConditions": [{"name": "a", "expression": "object.metadata.name =="}]}]}  # fmt: skip
    problems = validation.validate("ValidatingWebhookConfiguration", obj, None)
    assert any(p.startswith("webhooks[0].matchConditions[0].expression") for p in problems), (
        problems
    )
    obj["webhooks"][0]["matchConditions"][0]["expression"] = "object.metadata.name == 'x'"  # type: ignore[index]
    assert validation.validate("ValidatingWebhookConfiguration", obj, None) == []


def test_match_conditions_ask_the_authorizer_for_the_requests_user() -> None:
    """The webhook docs' breakglass condition: a user allowed `breakglass` on
    the configuration skips the webhook; others are sent to it."""
    from controlplane.apiserver.auth import Identity
    from controlplane.apiserver.authz import Authorizer
    from controlplane.apiserver.celauthz import CelAuthorizer
    from controlplane.apiserver.rbacindex import RbacIndex

    rbac = RbacIndex()
    rbac.load([
        ("ClusterRole", _json({"metadata": {"name": "bg"}, "rules": [{
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["validatingwebhookconfigurations"], "verbs": ["breakglass"]}]})),
        ("ClusterRoleBinding", _json({"metadata": {"name": "bg"},
                                      "roleRef": {"kind": "ClusterRole", "name": "bg"},
                                      "subjects": [{"kind": "User", "name": "carol"}]})),
    ])  # fmt: skip
    hooks = admission("ValidatingWebhookConfiguration", matchConditions=[{
        "name": "breakglass", "expression":
        '!authorizer.group("admissionregistration.k8s.io")'
        '.resource("validatingwebhookconfigurations").name("my-webhook.example.com")'
        '.check("breakglass").allowed()'}])  # fmt: skip
    hooks.authorizer = CelAuthorizer(Authorizer(rbac=rbac))
    client = Allow()
    hooks.client = client
    for user, calls in (("carol", 0), ("bob", 1)):
        req = request()
        req.identity = Identity(user)
        hooks.validate_request(req)
        assert client.calls == calls, user
