"""MutatingWebhookConfiguration (admissionregistration.k8s.io/v1, cluster-scoped):
mutating admission webhooks, stored and validated as Kubernetes does
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
    webhooks.defaults(obj, mutating=True)


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    webhooks.validate(e, obj, mutating=True)


DEFINITION = KindDef(
    KindInfo(
        "MutatingWebhookConfiguration",
        "admissionregistration.k8s.io/v1",
        "mutatingwebhookconfigurations",
        "mutatingwebhookconfiguration",
        (),
        namespaced=False,
        has_status=False,
    ),
    types={
        "MutatingWebhookConfiguration": kind(
            webhooks.PACKAGE,
            "MutatingWebhookConfiguration describes the configuration of an admission webhook.",
            ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"),
            webhooks=("[]MutatingWebhook", "The webhooks and the resources they apply to."),
        ),
        "MutatingWebhook": webhooks.webhook_type(mutating=True),
        **({} if True else webhooks.SHARED_TYPES),
    },
    defaults=defaults,
    validate=validate,
    printer=webhooks.PRINTER,
    patch_meta=facts(extra={"webhooks": merge("name")}),  # Kubernetes: merge on name
)
