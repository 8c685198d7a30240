"""Repeated keys in JSON bodies (api/duplicates.py): found with the paths and
in the order sigs.k8s.io/json's strict decoder reports them, and ruled out by
byte counts alone wherever the text cannot hide one."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from controlplane.api import duplicates, jsoncodec

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"},
                    "annotations": {"kubectl.kubernetes.io/last-applied-configuration":
                                    json.dumps({"apiVersion": "v1", "kind": "Pod",
                                                "metadata": {"name": "p"}})}},
       "spec": {"containers": [{"name": "c", "image": "registry.local:5000/web:1.0",
                                "args": ["--listen=:8080", '{"a":1}', ":colon-first"]}]}}  # fmt: skip


def paths(text: str) -> list[str]:
    found = duplicates.find(text.encode())
    return [path for _, path in found.duplicates]


def test_paths_and_order_are_the_strict_decoders() -> None:
    # Each repeated path once, in the order met; list items as [i], keys joined by ".".
    text = '{"a":1,"a":2,"a":3,"b":4,"b":5,"C":7,"C":8,"e":[{"f":1,"f":1}]}'
    assert paths(text) == ["a", "b", "C", "e[0].f"]
    text = '{"a":"","b":"","a":"","b":"","c":{"c":"","c":""},"d":{"e":{"f":1,"f":1}},"e":[{"g":1,"g":1}]}'
    assert paths(text) == ["a", "b", "c.c", "d.e.f", "e[0].g"]
    # A JSON patch: its operations are a list at the top.
    assert paths('[{"op":"add","path":"/a","path":"/b"}]') == ["[0].path"]
    # A repeat inside the first of two values comes before the repeat of its key.
    assert paths('{"s":{"x":1,"x":2},"s":{"y":1}}') == ["s.x", "s"]


def test_ordinals_place_other_errors_among_the_repeats() -> None:
    found = duplicates.find(b'{"m":{"n":1,"n":2},"s":{"u":1,"p":1,"p":2}}')
    assert found.duplicates == [(3, "m.n"), (7, "s.p")]
    assert found.first["s.u"] == 5 and found.first["s"] == 4


def test_at_most_a_hundred() -> None:
    text = "{" + ",".join(f'"k{i}":1,"k{i}":2' for i in range(150)) + "}"
    assert len(paths(text)) == duplicates.MAX_ERRORS


@pytest.mark.parametrize("obj", [POD, {"a": "x\\y"}, {"a": 'say "hi":'}, {}, [], {"": {"": 1}}])
def test_documents_without_repeats_have_none(obj: Any) -> None:
    data = jsoncodec.dumps(obj)
    assert duplicates.scan(data, jsoncodec.loads(data)) is None


def test_the_cheap_check_rules_out_kubectls_bodies() -> None:
    # Compact JSON with escaped quotes (last-applied) and colons in values:
    # byte counts alone prove there is no repeat, no second decode.
    data = jsoncodec.dumps(POD)
    assert not duplicates.possible(data, jsoncodec.loads(data))
    spaced = json.dumps(POD, indent=2).encode()  # `"key": value`: still no space before ':'
    assert not duplicates.possible(spaced, jsoncodec.loads(spaced))
    # Go's encoder escapes <, > and &: counted no more, decoded again, nothing found.
    go = b'{"metadata":{"annotations":{"a":"\\u003cb\\u003e"}}}'
    assert duplicates.possible(go, jsoncodec.loads(go))
    assert duplicates.scan(go, jsoncodec.loads(go)) is None


@pytest.mark.parametrize(
    "text",
    [
        '{"a":1,"a":2}',
        '{"a" :1,"a":2}',  # a space before the colon
        '{"a":1,"a":"\\u003ax"}',  # an escaped ':' starting the dropped value
        '{"a":":x","b":{"c":1},"b":{"c":1}}',
        '{"a\\\\":1,"a\\\\":2}',  # an escaped backslash before the closing quote
        '{"k":{"x":"\\":","x":1}}',
    ],
)
def test_every_repeat_is_found(text: str) -> None:
    data = text.encode()
    found = duplicates.scan(data, jsoncodec.loads(data))
    assert found is not None and found.duplicates, text


def test_random_repeats_are_never_missed() -> None:
    rng = random.Random(28)
    alphabet = ['"', ":", "\\", "a", "é", " ", "{", "}"]
    for _ in range(300):
        keys = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 4))) for _ in range(4)]
        values = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 4))) for _ in range(4)]
        pairs = [f"{json.dumps(k)}:{json.dumps(v)}" for k, v in zip(keys, values, strict=True)]
        if rng.random() < 0.5:
            pairs.append(pairs[rng.randrange(len(pairs))].split(":")[0] + ':"z"')
        data = ("{" + ",".join(pairs) + "}").encode()
        try:
            doc = jsoncodec.loads(data)
        except ValueError:
            continue
        repeated = len(doc) < len(pairs)
        found = duplicates.scan(data, doc)
        assert (found is not None) == repeated, data
