"""CRD conversion webhooks: ConversionReview calls, as kube-apiserver's
webhook converter makes them.

    converter = ConversionWebhooks(webhook_client)
    crd_versions.set_webhook_converter(converter)

One call converts one object, or a list page's items to `desiredAPIVersion`: the
request (`apiextensions.k8s.io/v1` ConversionReview, or v1beta1 when the
CRD's conversionReviewVersions lists only that) carries a fresh `uid` and
the objects; the answer must carry the same uid, `result.status: Success`
and as many `convertedObjects`, each at the desired apiVersion, of the same
kind, name, namespace and uid. Each converted object keeps the original's
metadata except labels and annotations (kube-apiserver's restoreObjectMeta).
Every failure is an InternalError worded as Kubernetes' (`conversion webhook
for <group/version, Kind=K> failed: ...`): nothing is stored or answered
from a failed conversion.

The HTTPS call is the shared webhook client's (webhooks/client.py): it
blocks the calling thread only, so callers run conversions on the
executor, never on the event loop.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from controlplane.apiserver.webhooks.client import CallError, WebhookClient
from controlplane.client.errors import InternalError

Object = dict[str, Any]

# kube-apiserver gives conversion webhooks no timeout of their own: its
# webhook client's default (30s) bounds a call.
TIMEOUT = 30.0
REVIEW_GROUP = "apiextensions.k8s.io"


def _failed(text: str) -> InternalError:
    return InternalError(text, reason="Unknown")


class ConversionWebhooks:
    def __init__(self, client: WebhookClient, timeout: float = TIMEOUT) -> None:
        self.client = client
        self.timeout = timeout

    def __call__(
        self, webhook: Object, objects: list[Object], desired: str, gvk: str, listed: bool = False
    ) -> list[Object]:
        """`objects` converted to `desired`; `listed`: they are a list's items
        (Kubernetes words its errors for them differently)."""
        versions = [
            v for v in webhook.get("conversionReviewVersions") or [] if v in ("v1", "v1beta1")
        ]
        if not versions:
            raise _failed("no supported conversion review versions")
        review_version = f"{REVIEW_GROUP}/{versions[0]}"
        uid = str(uuid.uuid4())
        review = {
            "apiVersion": review_version,
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
        }
        body = json.dumps(review, separators=(",", ":")).encode()
        try:
            data = self.client.post(webhook.get("clientConfig") or {}, body, self.timeout)
        except CallError as err:
            raise _failed(f"conversion webhook for {gvk} failed: {err}") from err
        try:
            converted = _converted(json.loads(data), review_version, uid)
        except ValueError as err:
            raise _failed(f"conversion webhook for {gvk} failed: {err}") from err
        if len(converted) != len(objects):
            raise _failed(
                f"conversion webhook for {gvk} returned {len(converted)} objects, "
                f"expected {len(objects)}"
            )
        out = []
        for index, (original, item) in enumerate(zip(objects, converted, strict=True)):
            prefix = f"conversion webhook for {gvk}"
            out.append(_checked(original, item, desired, prefix, index, listed))
        return out


def _converted(answer: Any, review_version: str, uid: str) -> list[Any]:
    """The convertedObjects of a ConversionReview answer (ValueError: why not)."""
    if not isinstance(answer, dict):
        raise ValueError("the answer is not a ConversionReview object")
    if review_version.endswith("/v1"):
        got = f"{answer.get('apiVersion')}, Kind={answer.get('kind')}"
        if got != f"{review_version}, Kind=ConversionReview":
            raise ValueError(
                f"expected webhook response of {review_version}, Kind=ConversionReview, got {got}"
            )
    response = answer.get("response")
    if not isinstance(response, dict):
        raise ValueError("no response provided")
    if review_version.endswith("/v1") and response.get("uid") != uid:
        raise ValueError(f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
    result = response.get("result") or {}
    if not isinstance(result, dict) or result.get("status") != "Success":
        message = result.get("message") if isinstance(result, dict) else None
        if message:
            raise ValueError(str(message))
        status = result.get("status", "") if isinstance(result, dict) else ""
        raise ValueError(f"response.result.status was '{status}', not 'Success'")
    converted = response.get("convertedObjects") or []
    if not isinstance(converted, list):
        raise ValueError("response.convertedObjects: not a list")
    return converted


def _checked(
    original: Object, item: Any, desired: str, prefix: str, index: int, listed: bool
) -> Object:
    """A converted object, checked and given the original's metadata, with
    kube-apiserver's wording (a list's differs from a single object's)."""
    what = "converted object" if listed else "object"
    at = f"{prefix} returned invalid {what} at index {index}"
    if not isinstance(item, dict):
        raise _failed(f"{at}: not a JSON object")
    if item.get("apiVersion") != desired:
        raise _failed(
            f"{at}: invalid groupVersion (expected {desired}, received {item.get('apiVersion')})"
        )
    if item.get("kind") != original.get("kind"):
        raise _failed(
            f"{at}: invalid kind (expected {original.get('kind')}, received {item.get('kind')})"
        )
    problem = _changed_identity(original, item)
    if problem:
        raise _failed(f"{at if listed else prefix + ' returned invalid object'}: {problem}")
    problem = _restore_meta(original, item)
    if problem:
        where = f"metadata in object at index {index}" if listed else "metadata"
        raise _failed(f"{prefix} returned invalid {where}: {problem}")
    return item


def _meta(obj: Object) -> Object:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _changed_identity(original: Object, converted: Object) -> str:
    """kube-apiserver's validateConvertedObject: name, namespace, uid kept."""
    before, after = _meta(original), _meta(converted)
    for field, label in (("name", "name"), ("namespace", "namespace"), ("uid", "UID")):
        if (before.get(field) or "") != (after.get(field) or ""):
            return (
                f"must have the same {label}: {before.get(field) or ''} != {after.get(field) or ''}"
            )
    return ""


def _restore_meta(original: Object, converted: Object) -> str:
    """The original's metadata on the converted object, but its labels and
    annotations as the webhook answered them (string values only)."""
    answered = converted.get("metadata")
    if not isinstance(answered, dict):
        return "missing metadata in converted object"
    meta = json.loads(json.dumps(_meta(original)))
    for field in ("labels", "annotations"):
        value = answered.get(field)
        if value is None:
            meta.pop(field, None)
            continue
        if not isinstance(value, dict):
            return f"invalid metadata.{field} of type {type(value).__name__} in converted object"
        for key, item in value.items():
            if not isinstance(item, str):
                return f"metadata.{field}[{key}] must be a string, but is {type(item).__name__} in converted object"
        meta[field] = value
    converted["metadata"] = meta
    return ""
