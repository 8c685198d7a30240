"""Bad input the API fuzz target of issue 17 found, each refused as
Invalid naming the field, with what was stored left as it was: integers
past 64 bits (a Deployment's replicas of 2^70 and a list item of 2^63 were
stored as they came, which no Go client can read back), a list field given
a number (defaulting raised TypeError: a 500), and `metadata: null` on
create (KeyError: a 500)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controlplane.apiserver.registry import Registry
from controlplane.client.errors import Invalid, NotFound
from controlplane.storage.sqlite import SqliteStore


@pytest.fixture
def registry(tmp_path: Path) -> Any:
    store = SqliteStore(tmp_path / "state.db")
    reg = Registry(store)
    reg.create("Namespace", {"metadata": {"name": "default"}})
    yield reg
    store.close()


DEPLOYMENT: dict[str, Any] = {
    "metadata": {"name": "d", "namespace": "default"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "a"}},
        "template": {
            "metadata": {"labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        },
    },
}

REVISION: dict[str, Any] = {
    "metadata": {"name": "r", "namespace": "default"},
    "revision": 1,
    "data": {"spec": {"template": {}}},
}


def test_integers_past_64_bits_are_refused_and_nothing_changes(registry: Registry) -> None:
    with pytest.raises(Invalid, match=r"spec\.replicas: the integer 1180591620717411303424"):
        registry.create("Deployment", {**DEPLOYMENT, "spec": {**DEPLOYMENT["spec"],
                                                              "replicas": 2**70}})  # fmt: skip
    before = registry.create("Deployment", DEPLOYMENT)
    with pytest.raises(Invalid, match=r"spec\.replicas: .* out of range"):
        registry.patch("Deployment", "d", {"spec": {"replicas": 2**64}}, "default")
    assert registry.get("Deployment", "d", "default") == before
    # In a free-form field (a ControllerRevision's data is any JSON; an
    # unknown field anywhere else would be dropped before the check).
    with pytest.raises(Invalid, match=r"data\.x\[1\]: the integer 9223372036854775808"):
        registry.create("ControllerRevision", {**REVISION, "data": {"x": [1, 2**63]}})
    with pytest.raises(NotFound):
        registry.get("ControllerRevision", "r", "default")


def test_the_widest_int64_values_and_long_digit_strings_are_kept(registry: Registry) -> None:
    data = {"big": "123456789012345678901234567890"}
    registry.create("ConfigMap", {"metadata": {"name": "c", "namespace": "default"}, "data": data})
    stored, _ = registry.get("ConfigMap", "c", "default")
    assert b"123456789012345678901234567890" in stored
    widest = [2**63 - 1, -(2**63)]
    registry.create("ControllerRevision", {**REVISION, "data": {"x": widest}})
    stored, _ = registry.get("ControllerRevision", "r", "default")
    assert b"[9223372036854775807,-9223372036854775808]" in stored


@pytest.mark.parametrize(
    ("kind", "obj", "field"),
    [
        ("Deployment", {**DEPLOYMENT, "spec": {**DEPLOYMENT["spec"], "template": {
            "metadata": {"labels": {"app": "a"}}, "spec": {"containers": 1.5}}}},
         "containers"),
        ("Deployment", {**DEPLOYMENT, "spec": {**DEPLOYMENT["spec"], "template": {
            "metadata": {"labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "image": "i", "ports": 7}]}}}}, "ports"),
        ("Service", {"metadata": {"name": "s", "namespace": "default"},
                     "spec": {"ports": 80}}, "ports"),
        ("ConfigMap", {"metadata": None, "data": {"a": "b"}}, "metadata.name"),
    ],
)  # fmt: skip
def test_wrong_types_are_refused_not_crashed_on(
    registry: Registry, kind: str, obj: dict[str, Any], field: str
) -> None:
    with pytest.raises(Invalid, match=field):
        registry.create(kind, obj, "default")
