"""Labels' and annotations' keys and values, as Kubernetes validates them
(ValidateLabels, ValidateAnnotations), asked again and again: the answers
stay the same when a key or value was seen before, and strings too long to
be valid are never kept by the checks' caches (a hostile body cannot grow them)."""

from __future__ import annotations

import pytest

from controlplane.api import checks
from controlplane.api.checks import Errors, annotation_map, label_map


def label_errors(labels: object) -> list[str]:
    e = Errors()
    label_map(e, "metadata.labels", labels)
    return [str(item) for item in e.items]


def annotation_errors(annotations: object) -> list[str]:
    e = Errors()
    annotation_map(e, "metadata.annotations", annotations)
    return [str(item) for item in e.items]


@pytest.mark.parametrize("repeat", [1, 2, 3])
def test_valid_labels_pass_every_time(repeat: int) -> None:
    labels = {"app": "web", "volcano.sh/job-name": "b0001", "example.com/tier": "", "x": "a.b_c-d"}
    assert label_errors(labels) == []


@pytest.mark.parametrize("repeat", [1, 2])
def test_bad_keys_and_values_are_refused_every_time(repeat: int) -> None:
    found = label_errors({"bad key": "v", "ok": "-bad", "long": "a" * 64, "n": 5})
    assert any("bad key" in f and "name part must consist" in f for f in found), found
    assert any("-bad" in f and "a valid label must be" in f for f in found), found
    assert any("must be no more than 63 characters" in f for f in found), found
    assert any("a label value must be a string" in f for f in found), found
    assert len(found) == 4, found


def test_annotation_keys_are_checked_as_kubernetes_does_lowercased() -> None:
    assert annotation_errors({"Example.COM/Owner": "anything at all"}) == []
    assert annotation_errors({"/no-prefix": "x"}) != []


def test_strings_too_long_to_be_valid_are_not_kept() -> None:
    keys, values = (
        checks._known_key.cache_info().currsize,
        checks._known_label_value.cache_info().currsize,
    )
    for i in range(50):
        huge = f"{i}" + "a" * 100_000
        assert label_errors({huge: "v"}) and label_errors({"k": huge})
        assert annotation_errors({"example.com/" + huge: "v"})
    assert checks._known_key.cache_info().currsize <= keys + 1  # "k" at most
    assert checks._known_label_value.cache_info().currsize <= values + 1  # "v" at most
