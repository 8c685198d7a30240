"""ValidatingWebhookConfiguration (admissionregistration.k8s.io/v1, cluster-scoped):
validating admission webhooks, stored and validated as Kubernetes does
(webhooks.py has the rules and columns); skiff's API server does not call
them (see the package's docstring)."""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors
from controlplane.api.kinds.admissionregistration import webhooks
from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import facts, merge
from controlplane.api.schema import kind

Object = dict[str, Any]


def defaults(obj: Object) -> None:
    webhooks.defaults(obj, mutating=False)


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    webhooks.validate(e, obj, mutating=False)


DEFINITION = KindDef(
    KindInfo(
        "ValidatingWebhookConfiguration",
        "admissionregistration.k8s.io/v1",
        "validatingwebhookconfigurations",
        "validatingwebhookconfiguration",
        (),
        namespaced=False,
        has_status=False,
    ),
    types={
        "ValidatingWebhookConfiguration": kind(
            webhooks.PACKAGE,
            "ValidatingWebhookConfiguration describes the configuration of an admission webhook.",
            ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration"),
            webhooks=("[]ValidatingWebhook", "The webhooks and the resources they apply to."),
        ),
        "ValidatingWebhook": webhooks.webhook_type(mutating=False),
        **({} if False else webhooks.SHARED_TYPES),
    },
    defaults=defaults,
    validate=validate,
    printer=webhooks.PRINTER,
    patch_meta=facts(extra={"webhooks": merge("name")}),  # Kubernetes: merge on name
)
