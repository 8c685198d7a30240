"""Reading a patched object back into its kind's types, in Kubernetes' words."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api import restore

POD: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                       "spec": {"containers": [{"name": "c", "image": "i"}]}}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "converter", "decoder"),
    [
        ({"metadata": {"labels": "x"}}, "cannot restore map from string",
         "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.labels "
         "of type map[string]string"),
        ({"spec": [1]}, "cannot restore struct from: slice",
         "json: cannot unmarshal array into Go struct field Pod.spec of type v1.PodSpec"),
        ({"spec": {"containers": {"name": "c"}}}, "cannot restore slice from map",
         "json: cannot unmarshal object into Go struct field PodSpec.spec.containers "
         "of type []v1.Container"),
        ({"spec": {"containers": [{"name": "c", "ports": 80}]}}, "cannot restore slice from int64",
         "json: cannot unmarshal number into Go struct field Container.spec.containers.ports "
         "of type []v1.ContainerPort"),
    ],
)  # fmt: skip
def test_the_first_field_that_cannot_be_read_back(
    change: dict[str, Any], converter: str, decoder: str
) -> None:
    found = restore.mismatch({**POD, **change})
    assert found is not None
    assert (found.converter_error(), found.decoder_error()) == (converter, decoder)


def test_a_well_formed_object_and_custom_kinds_pass() -> None:
    assert restore.mismatch(POD) is None
    assert restore.mismatch({"apiVersion": "example.com/v1", "kind": "W", "spec": 1}) is None


def test_go_value_is_gos_plus_v() -> None:
    doc = {"metadata": {"labels": "invalid", "b": [1, True, None]}}
    assert restore.go_value(doc) == "map[metadata:map[b:[1 true <nil>] labels:invalid]]"
