"""Kubernetes' protobuf bodies of the review kinds (controlplane/api/k8sproto):
what kubectl in a pod sends for `auth can-i`, decoded to the JSON shape;
kinds without protobuf and damaged bodies refused with the reason."""

from __future__ import annotations

import pytest

from controlplane.api.k8sproto import envelope as k8sprotobuf


def field(number: int, value: bytes) -> bytes:
    """A length-delimited field (lengths here stay under 128)."""
    assert len(value) < 128
    return bytes([number << 3 | 2, len(value)]) + value


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = field(1, api_version.encode()) + field(2, kind.encode())
    return k8sprotobuf.MAGIC + field(1, type_meta) + field(2, raw) + field(4, b"application/x")


def test_self_subject_access_review_as_kubectl_sends_it() -> None:
    attrs = field(1, b"default") + field(2, b"list") + field(5, b"pods")
    status = field(3, bytes([1 << 3 | 0, 1]))  # status.allowed = true: the registry drops it
    body = envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview",
                    field(1, b"") + field(2, field(1, attrs)) + status)  # fmt: skip
    assert k8sprotobuf.decode(body) == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "metadata": {},
        "spec": {"resourceAttributes": {"namespace": "default", "verb": "list",
                                        "resource": "pods"}},
        "status": {"allowed": True},
    }  # fmt: skip


def test_subject_access_review_with_groups_and_a_path() -> None:
    spec = field(2, field(1, b"/healthz") + field(2, b"get")) + field(3, b"alice")
    spec += field(4, b"dev") + field(4, b"ops")
    body = envelope("authorization.k8s.io/v1", "SubjectAccessReview", field(2, spec))
    assert k8sprotobuf.decode(body)["spec"] == {
        "nonResourceAttributes": {"path": "/healthz", "verb": "get"},
        "user": "alice",
        "groups": ["dev", "ops"],
    }


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b'{"kind": "Pod"}', "magic"),
        (
            envelope("batch.volcano.sh/v1alpha1", "Job", field(1, field(1, b"j"))),
            "no protobuf serialization: use application/json",
        ),
        (k8sprotobuf.MAGIC + bytes([1 << 3 | 2, 50]) + b"short", "past the end"),
        (k8sprotobuf.MAGIC + bytes([1 << 3 | 3]), "wire type 3"),
    ],
)
def test_refusals_say_why(body: bytes, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        k8sprotobuf.decode(body)
