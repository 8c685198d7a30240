"""What admission costs a create, for bench.kubeapi's `--admission`: REST
creates/s (10 clients, one pod per POST, JSON) with each admission setup
installed in turn, beside none, and the server's CPU per create.

- `none`: no webhook or policy;
- `webhook`: one ValidatingWebhookConfiguration matching every create of
  every resource, served over HTTPS by a small allow-all webhook in this
  process (tests/harness/webhook_server.py), called by URL with its
  caBundle (the API server keeps its connections alive);
- `vap`: one ValidatingAdmissionPolicy (+binding) matching every create
  and one ValidatingAdmissionPolicy of three validations (bench/admission_vap.py).

Kubernetes' own overhead is the reference: kube-apiserver calls a webhook
per matching request over a kept-alive HTTP/2 connection (no figure of
ours for it on this machine: no kube-apiserver here).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

from tests.harness.webhook_server import WebhookServer, review_response

PATH = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


class RestLike(Protocol):
    def request(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]: ...


@contextmanager
def none(rest: RestLike) -> Iterator[None]:
    yield


@contextmanager
def webhook(rest: RestLike) -> Iterator[None]:
    """An allow-all validating webhook on every create, in force while open."""
    with WebhookServer(lambda review: review_response(review, True)) as server:
        config = {"metadata": {"name": "bench-every-create"}, "webhooks": [{
            "name": "every-create.bench.skiff.dev",
            "clientConfig": server.client_config("/allow"),
            "rules": [{"operations": ["CREATE"], "apiGroups": ["*"], "apiVersions": ["*"],
                       "resources": ["*"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail",
        }]}  # fmt: skip
        code, body = rest.request("POST", PATH, config)
        assert code == 201, body[:300]
        try:
            _until_called(rest, server)
            yield
        finally:
            rest.request("DELETE", f"{PATH}/bench-every-create")


def _until_called(rest: RestLike, server: WebhookServer, timeout: float = 30) -> None:
    """Wait (with a deadline) until the API server calls the webhook: its
    configuration cache has it."""
    deadline = time.monotonic() + timeout
    n = 0
    while not server.requests:
        if time.monotonic() > deadline:
            raise TimeoutError("the API server never called the bench webhook")
        n += 1
        probe = {"metadata": {"name": f"admission-probe-{n}"}, "data": {}}
        rest.request("POST", "/api/v1/namespaces/bench/configmaps", probe)


VAP_GROUP_PATH = "/apis/admissionregistration.k8s.io/v1"
DENY_LABEL = "bench-deny"


@contextmanager
def vap(rest: RestLike) -> Iterator[None]:
    """One ValidatingAdmissionPolicy (+binding, Deny) on every create, in force while open."""
    policy = {"metadata": {"name": "bench-every-create"}, "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["*"],
                                                "apiVersions": ["*"], "resources": ["*"]}]},
        "validations": [
            {"expression": f"!has(object.metadata.labels) || !('{DENY_LABEL}' in "
                           "object.metadata.labels)", "message": "labelled bench-deny"},
            {"expression": "!has(object.metadata.name) || size(object.metadata.name) <= 253"},
            {"expression": "!has(object.spec) || !has(object.spec.replicas) || "
                           "object.spec.replicas <= 1000"},
        ]}}  # fmt: skip
    binding = {"metadata": {"name": "bench-every-create"},
               "spec": {"policyName": "bench-every-create", "validationActions": ["Deny"]}}  # fmt: skip
    for kind, body in (("validatingadmissionpolicies", policy),
                       ("validatingadmissionpolicybindings", binding)):  # fmt: skip
        code, text = rest.request("POST", f"{VAP_GROUP_PATH}/{kind}", body)
        assert code == 201, text[:300]
    try:
        _until_denied(rest)
        yield
    finally:
        for kind in ("validatingadmissionpolicybindings", "validatingadmissionpolicies"):
            rest.request("DELETE", f"{VAP_GROUP_PATH}/{kind}/bench-every-create")


def _until_denied(rest: RestLike, timeout: float = 30) -> None:
    """Wait (with a deadline) until the policy is in force: a labelled create is refused."""
    deadline = time.monotonic() + timeout
    n = 0
    while True:
        n += 1
        probe = {"metadata": {"name": f"vap-probe-{n}", "labels": {DENY_LABEL: "1"}}, "data": {}}
        code, _ = rest.request("POST", "/api/v1/namespaces/bench/configmaps", probe)
        if code == 403:
            return
        if time.monotonic() > deadline:
            raise TimeoutError("the ValidatingAdmissionPolicy never came into force")


SETUPS: dict[str, Callable[[RestLike], AbstractContextManager[None]]] = {
    "none": none,
    "webhook": webhook,
    "vap": vap,
}
