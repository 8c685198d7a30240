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


def vap(rest: RestLike) -> AbstractContextManager[None]:
    """One ValidatingAdmissionPolicy matching every create (bench/admission_vap.py,
    imported here, which imports bench.kubeapi, which imports this)."""
    from bench.admission_vap import vap as setup

    return setup(rest)


SETUPS: dict[str, Callable[[RestLike], AbstractContextManager[None]]] = {
    "none": none,
    "webhook": webhook,
    "vap": vap,
}
