"""The stored JSON form and writing a resourceVersion into it without decoding."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from controlplane.apiserver.codec import decode, encode, new_uid, with_version


def test_encode_puts_apiversion_kind_metadata_first_and_drops_resource_version() -> None:
    obj: dict[str, Any] = {"spec": {"template": {"metadata": {"labels": {"a": "b"}}}},
           "kind": "Deployment",
           "metadata": {"name": "web", "resourceVersion": "7"}, "apiVersion": "apps/v1"}  # fmt: skip
    data = encode(obj)
    assert list(json.loads(data)) == ["apiVersion", "kind", "metadata", "spec"]
    assert "resourceVersion" not in json.loads(data)["metadata"]
    assert obj["metadata"]["resourceVersion"] == "7"  # the caller's object is untouched


@pytest.mark.parametrize(
    "obj",
    [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {}},
        {"metadata": {"name": "only-metadata"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}},
        {"kind": "Deployment", "spec": {"template": {"metadata": {"name": "inner"}}},
         "metadata": {"name": "outer", "labels": {"x": "\"metadata\":{"}}},
    ],
)  # fmt: skip
def test_with_version_equals_decode_then_set(obj: dict[str, object]) -> None:
    data = encode(obj)
    fast = json.loads(with_version(data, 42))
    assert fast == decode(data, 42)
    assert fast["metadata"]["resourceVersion"] == "42"


def test_with_version_takes_the_slow_way_for_other_orders() -> None:
    # Stored by something else: nested metadata first. Still correct.
    data = b'{"spec":{"template":{"metadata":{"name":"inner"}}},"metadata":{"name":"outer"}}'
    out = json.loads(with_version(data, 9))
    assert out["metadata"] == {"name": "outer", "resourceVersion": "9"}
    assert out["spec"]["template"]["metadata"] == {"name": "inner"}


def test_new_uid_is_a_random_version_4_uuid() -> None:
    uids = {new_uid() for _ in range(1000)}
    assert len(uids) == 1000
    for text in list(uids)[:200]:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
