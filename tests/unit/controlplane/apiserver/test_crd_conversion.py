"""ConversionReview calls (crd_conversion.ConversionWebhooks) over a stand-in
for the HTTPS client: the request's shape, the review version chosen, the
metadata restored, and every way an answer is refused, with kube-apiserver's
words."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from controlplane.apiserver.crd_conversion import ConversionWebhooks
from controlplane.apiserver.webhooks.client import CallError, WebhookClient
from controlplane.client.errors import InternalError

Object = dict[str, Any]
GVK = "example.com/v1, Kind=Widget"


class FakeClient(WebhookClient):
    def __init__(self, answer: Callable[[Object], Any]) -> None:
        super().__init__()
        self.answer = answer
        self.sent: list[Object] = []

    def post(self, client_config: Object, body: bytes, timeout: float) -> bytes:
        review = json.loads(body)
        self.sent.append(review)
        result = self.answer(review)
        if isinstance(result, Exception):
            raise result
        return result if isinstance(result, bytes) else json.dumps(result).encode()


def converted(review: Object, **changes: Any) -> Object:
    request = review["request"]
    objs = []
    for obj in request["objects"]:
        out = json.loads(json.dumps(obj))
        out["apiVersion"] = request["desiredAPIVersion"]
        out["spec"] = {"size": out["spec"].pop("replicas")}
        out["metadata"]["labels"] = {"converted": "yes"}
        out["metadata"]["generation"] = 99  # not the webhook's to change: restored
        objs.append(out)
    response = {"uid": request["uid"], "convertedObjects": objs, "result": {"status": "Success"}}
    return {"apiVersion": review["apiVersion"], "kind": "ConversionReview",
            "response": {**response, **changes}}  # fmt: skip


WEBHOOK = {"clientConfig": {"url": "https://127.0.0.1:1/c"}, "conversionReviewVersions": ["v1"]}


def widget(name: str = "w") -> Object:
    return {"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "generation": 2, "labels": {"a": "b"}},
            "spec": {"replicas": 3}}  # fmt: skip


def test_a_conversion_review_and_its_answer() -> None:
    client = FakeClient(converted)
    out = ConversionWebhooks(client)(WEBHOOK, [widget()], "example.com/v2", GVK)
    sent = client.sent[0]
    assert sent["apiVersion"] == "apiextensions.k8s.io/v1" and sent["kind"] == "ConversionReview"
    assert sent["request"]["desiredAPIVersion"] == "example.com/v2"
    assert sent["request"]["objects"] == [widget()] and sent["request"]["uid"]
    assert out[0]["apiVersion"] == "example.com/v2" and out[0]["spec"] == {"size": 3}
    meta = out[0]["metadata"]
    assert meta["labels"] == {"converted": "yes"} and meta["generation"] == 2


def test_v1beta1_when_the_crd_asks_only_for_it() -> None:
    client = FakeClient(converted)
    webhook = {**WEBHOOK, "conversionReviewVersions": ["v9", "v1beta1"]}
    ConversionWebhooks(client)(webhook, [widget()], "example.com/v2", GVK)
    assert client.sent[0]["apiVersion"] == "apiextensions.k8s.io/v1beta1"


def renamed(review: Object) -> Object:
    answer = converted(review)
    answer["response"]["convertedObjects"][0]["metadata"]["namespace"] = "other"
    return answer


def bad_label(review: Object) -> Object:
    answer = converted(review)
    answer["response"]["convertedObjects"][0]["metadata"]["labels"] = {"n": 1}
    return answer


def wrong_kind(review: Object) -> Object:
    answer = converted(review)
    answer["response"]["convertedObjects"][0]["kind"] = "Gadget"
    return answer


@pytest.mark.parametrize(
    ("answer", "listed", "message"),
    [
        (lambda r: CallError('Post "https://127.0.0.1:1/c?timeout=30s": refused'), False,
         f'conversion webhook for {GVK} failed: Post "https://127.0.0.1:1/c?timeout=30s": refused'),
        (lambda r: b"[]", False, f"conversion webhook for {GVK} failed: the answer is not"),
        (lambda r: {**converted(r), "kind": "AdmissionReview"}, False,
         f"conversion webhook for {GVK} failed: expected webhook response of "
         "apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1, "
         "Kind=AdmissionReview"),
        (lambda r: {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}, False,
         f"conversion webhook for {GVK} failed: no response provided"),
        (lambda r: converted(r, result={"status": "Failure"}), False,
         f"conversion webhook for {GVK} failed: response.result.status was 'Failure', "
         "not 'Success'"),
        (lambda r: converted(r, convertedObjects=[]), False,
         f"conversion webhook for {GVK} returned 0 objects, expected 1"),
        (renamed, False, f"conversion webhook for {GVK} returned invalid object: must have the "
                         "same namespace: default != other"),
        (renamed, True, f"conversion webhook for {GVK} returned invalid converted object at "
                        "index 0: must have the same namespace: default != other"),
        (wrong_kind, False, f"conversion webhook for {GVK} returned invalid object at index 0: "
                            "invalid kind (expected Widget, received Gadget)"),
        (bad_label, False, f"conversion webhook for {GVK} returned invalid metadata: "
                           "metadata.labels[n] must be a string, but is int"),
        (bad_label, True, f"conversion webhook for {GVK} returned invalid metadata in object at "
                          "index 0: metadata.labels[n] must be a string"),
    ],
)  # fmt: skip
def test_refused_answers(answer: Callable[[Object], Any], listed: bool, message: str) -> None:
    hooks = ConversionWebhooks(FakeClient(answer))
    with pytest.raises(InternalError) as err:
        hooks(WEBHOOK, [widget()], "example.com/v2", GVK, listed)
    assert str(err.value).startswith(message), str(err.value)
