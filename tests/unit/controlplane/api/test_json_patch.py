"""JSON Patch (RFC 6902): the RFC's appendix cases, pointer escapes, errors and purity."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controlplane.api import json_patch
from controlplane.client.errors import Invalid

# (document, patch, expected) in the spirit of RFC 6902 appendix A.
GOOD: list[tuple[Any, list[dict[str, Any]], Any]] = [
    ({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}], {"foo": "bar", "baz": "qux"}),
    (
        {"foo": ["bar", "baz"]},
        [{"op": "add", "path": "/foo/1", "value": "qux"}],
        {"foo": ["bar", "qux", "baz"]},
    ),
    ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
    ({"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}], {"foo": ["bar", "baz"]}),
    (
        {"baz": "qux", "foo": "bar"},
        [{"op": "replace", "path": "/baz", "value": "boo"}],
        {"baz": "boo", "foo": "bar"},
    ),
    (
        {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
        [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
        {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
    ),
    (
        {"foo": ["all", "grass", "cows", "eat"]},
        [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
        {"foo": ["all", "cows", "eat", "grass"]},
    ),
    (
        {"baz": "qux", "foo": ["a", 2, "c"]},
        [
            {"op": "test", "path": "/baz", "value": "qux"},
            {"op": "test", "path": "/foo/1", "value": 2},
        ],
        {"baz": "qux", "foo": ["a", 2, "c"]},
    ),
    (
        {"foo": "bar"},
        [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
        {"foo": "bar", "child": {"grandchild": {}}},
    ),
    # Unknown members of an operation are ignored.
    (
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
        {"foo": "bar", "baz": "qux"},
    ),
    (
        {"foo": ["bar"]},
        [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
        {"foo": ["bar", ["abc", "def"]]},
    ),
    # Escapes: ~1 is '/', ~0 is '~'.
    ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10}),
    ({"a/b": 1}, [{"op": "replace", "path": "/a~1b", "value": 2}], {"a/b": 2}),
    ({"m~n": 1}, [{"op": "remove", "path": "/m~0n"}], {}),
    (
        {"foo": ["bar"]},
        [{"op": "copy", "from": "/foo", "path": "/baz"}],
        {"foo": ["bar"], "baz": ["bar"]},
    ),
    ({"foo": 1}, [{"op": "replace", "path": "", "value": [1]}], [1]),
    ({"foo": 1}, [{"op": "test", "path": "/foo", "value": 1.0}], {"foo": 1}),
    (
        {"x": {"a": 1, "b": 2}},
        [{"op": "test", "path": "/x", "value": {"b": 2, "a": 1}}],
        {"x": {"a": 1, "b": 2}},
    ),
    (
        {"metadata": {"labels": {"app.kubernetes.io/name": "web"}}},
        [{"op": "remove", "path": "/metadata/labels/app.kubernetes.io~1name"}],
        {"metadata": {"labels": {}}},
    ),
    ({"a": [1, 2]}, [{"op": "move", "from": "/a/0", "path": "/a/-"}], {"a": [2, 1]}),
    ({"a": 1}, [{"op": "move", "from": "/a", "path": "/a"}], {"a": 1}),
]

# (document, patch, words the message must contain)
BAD: list[tuple[Any, list[dict[str, Any]], list[str]]] = [
    ({"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}], ["operation 0", "/baz"]),
    (
        {"baz": "qux"},
        [{"op": "test", "path": "/baz", "value": "bar"}],
        ["operation 0", "test failed"],
    ),
    ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": "10"}], ["test failed"]),
    ({"foo": "bar"}, [{"op": "remove", "path": "/nope"}], ["remove /nope", "no value"]),
    ({"foo": "bar"}, [{"op": "replace", "path": "/nope", "value": 1}], ["replace /nope"]),
    ({"foo": [1]}, [{"op": "add", "path": "/foo/5", "value": 1}], ["out of range"]),
    ({"foo": [1]}, [{"op": "add", "path": "/foo/01", "value": 1}], ["not a list index"]),
    ({"foo": [1]}, [{"op": "remove", "path": "/foo/-"}], ["not a list index"]),
    ({"foo": 1}, [{"op": "bogus", "path": "/foo"}], ["unknown op"]),
    ({"foo": 1}, [{"op": "add", "path": "/bar"}], ["missing 'value'"]),
    ({"foo": 1}, [{"op": "copy", "path": "/bar"}], ["missing 'from'"]),
    ({"foo": 1}, [{"op": "add", "path": "bar", "value": 1}], ["must start with '/'"]),
    ({"a": {"b": 1}}, [{"op": "move", "from": "/a", "path": "/a/b/c"}], ["its own children"]),
    ({"a": 1}, [{"op": "add", "path": "/a/b", "value": 1}], ["not an object or a list"]),
    (
        {"a": 1},
        [{"op": "add", "path": "/b", "value": 1}, {"op": "test", "path": "/a", "value": 2}],
        ["operation 1"],
    ),
]


@pytest.mark.parametrize(("doc", "patch", "expected"), GOOD)
def test_applies(doc: Any, patch: list[dict[str, Any]], expected: Any) -> None:
    before = copy.deepcopy((doc, patch))
    assert json_patch.apply(doc, patch) == expected
    assert (doc, patch) == before


@pytest.mark.parametrize(("doc", "patch", "words"), BAD)
def test_refuses_with_the_operation_and_path(
    doc: Any, patch: list[dict[str, Any]], words: list[str]
) -> None:
    before = copy.deepcopy(doc)
    with pytest.raises(Invalid) as err:
        json_patch.apply(doc, patch)
    for word in words:
        assert word in str(err.value)
    assert doc == before


def test_not_a_list() -> None:
    with pytest.raises(Invalid, match="list of operations"):
        json_patch.apply({}, {"op": "add"})
    with pytest.raises(Invalid, match="operation 0: must be an object"):
        json_patch.apply({}, ["add"])


def test_added_value_is_not_shared_with_the_patch() -> None:
    value = {"x": [1]}
    out = json_patch.apply({}, [{"op": "add", "path": "/v", "value": value}])
    out["v"]["x"].append(2)
    assert value == {"x": [1]}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=10,
)
ops = st.lists(
    st.fixed_dictionaries(
        {
            "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]),
            "path": st.sampled_from(["", "/a", "/a/0", "/a/-", "/b", "/a/b"]),
            "from": st.sampled_from(["/a", "/b", "/a/0"]),
            "value": json_values,
        }
    ),
    max_size=4,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=st.dictionaries(st.sampled_from(["a", "b"]), json_values, max_size=2), patch=ops)
def test_never_mutates_its_input(doc: Any, patch: list[dict[str, Any]]) -> None:
    before = copy.deepcopy((doc, patch))
    try:
        json_patch.apply(doc, patch)
    except Invalid:
        pass
    assert (doc, patch) == before


def test_copies_are_bounded_as_kubernetes_bounds_them() -> None:
    """Each copy doubling the document, thirty would need gigabytes (issue 32)."""
    doc = {"data": {"a": "x" * 1000}}
    ops = [{"op": "copy", "from": "/data", "path": f"/data/k{i}"} for i in range(30)]
    with pytest.raises(Invalid, match="operation 11 .* the accumulated size increase of copy "
                                      r"is \d+, exceeding the limit 3145728"):  # fmt: skip
        json_patch.apply(doc, ops)
    small = json_patch.apply(doc, ops[:3], copy_limit=10_000)
    assert len(small["data"]) == 4
