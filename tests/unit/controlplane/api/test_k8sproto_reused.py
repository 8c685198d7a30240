"""Decoded parts of protobuf bodies reused by their bytes (k8sproto/reused.py):
the same objects as a fresh decode, never one dict shared between two bodies,
small parts and metadata not kept, the cache bounded."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.api.k8sproto import codec, envelope, reused


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    reused.clear()
    yield
    reused.clear()


def pod(name: str, image: str = "registry.local/bench/app:1.0") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "main", "image": image,
                                     "ports": [{"containerPort": 8080}],
                                     "env": [{"name": "MODE", "value": "bench"}],
                                     "resources": {"requests": {"cpu": "100m"}}}]}}  # fmt: skip


def kept() -> list[Any]:
    return list(reused._parts.items)


def test_a_second_body_with_the_same_spec_gets_an_equal_new_object() -> None:
    first = envelope.decode(envelope.encode(pod("a")))
    assert len(kept()) == 1  # the spec; the metadata differ per object and are not kept
    first["spec"]["containers"][0]["image"] = "changed"  # as the registry fills it in place
    second = envelope.decode(envelope.encode(pod("b")))
    assert second == pod("b") == codec.decode_document(envelope.encode(pod("b")))
    assert second["spec"] is not first["spec"]
    third = envelope.decode(envelope.encode(pod("c")))
    assert third["spec"]["containers"] is not second["spec"]["containers"]
    assert len(kept()) == 1


def test_other_bytes_are_decoded_and_kept_apart() -> None:
    for image in ("registry.local/one:1", "registry.local/two:2", "registry.local/one:1"):
        assert envelope.decode(envelope.encode(pod("a", image))) == pod("a", image)
    assert len(kept()) == 2


def test_small_parts_are_not_kept() -> None:
    small = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "s"},
             "spec": {"containers": [{"name": "c", "image": "i"}]}}  # fmt: skip
    assert envelope.decode(envelope.encode(small)) == small
    assert kept() == []


def test_the_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reused._parts, "budget", 8 * 1024)
    for i in range(200):
        image = f"registry.local/team/app-{i}:1.0"
        assert envelope.decode(envelope.encode(pod(f"p{i}", image))) == pod(f"p{i}", image)
    assert reused._parts.size <= 8 * 1024
    assert 0 < len(kept()) < 200


def test_a_part_too_large_to_keep_is_only_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reused, "MAX_SIZE", 80)
    big = pod("big", "registry.local/" + "x" * 100 + ":1")
    assert envelope.decode(envelope.encode(big)) == big
    assert kept() == []
