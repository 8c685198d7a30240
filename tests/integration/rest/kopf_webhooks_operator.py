"""A kopf operator with admission webhooks, as an operator author writes
one: `@kopf.on.validate` refuses a Gate whose spec.text is "forbidden",
`@kopf.on.mutate` stamps every Gate's spec. kopf serves them itself
(kopf.WebhookServer on 127.0.0.1, with the self-signed certificate the
test made) and registers its own Validating/MutatingWebhookConfiguration
(`settings.admission.managed`). Run by test_kopf_webhooks.py with `kopf
run`; it reaches the API server only through $KUBECONFIG."""

from __future__ import annotations

import os
from typing import Any

import kopf

GROUP, VERSION, PLURAL = "kopf.skiff.dev", "v1", "gates"


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.admission.server = kopf.WebhookServer(
        addr="127.0.0.1",
        port=int(os.environ["HOOK_PORT"]),
        host="127.0.0.1",
        certfile=os.environ["HOOK_CERT"],
        pkeyfile=os.environ["HOOK_KEY"],
        cafile=os.environ["HOOK_CA"],
    )
    settings.admission.managed = "gates.kopf.skiff.dev"


@kopf.on.validate(GROUP, VERSION, PLURAL, id="refuse-forbidden")
def refuse_forbidden(spec: Any, **_: Any) -> None:
    if spec.get("text") == "forbidden":
        raise kopf.AdmissionError("the text 'forbidden' is not allowed", code=403)


@kopf.on.mutate(GROUP, VERSION, PLURAL, id="stamp")
def stamp(patch: kopf.Patch, **_: Any) -> None:
    patch.spec["stamp"] = "kopf"
