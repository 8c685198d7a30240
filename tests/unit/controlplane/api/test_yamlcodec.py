"""YAML bodies decoded with Kubernetes' bounds (CVE-2019-11253): alias
expansion counted as go-yaml counts it, nesting bounded, and the result plain
JSON (a copy per alias, string keys, timestamps as written)."""

from __future__ import annotations

import pytest

from controlplane.api import yamlcodec
from controlplane.api.yamlcodec import YAMLDecodeError, allowed_alias_ratio, loads


def laughs(levels: int, fanout: int) -> str:
    lines = [f"a0: &a0 [{', '.join(['lol'] * fanout)}]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * fanout)}]")
    return "\n".join(lines)


def test_go_yamls_alias_ratio() -> None:
    assert allowed_alias_ratio(1000) == 0.99
    assert allowed_alias_ratio(400_000) == 0.99
    assert allowed_alias_ratio(4_000_000) == pytest.approx(0.10)
    assert allowed_alias_ratio(2_200_000) == pytest.approx(0.545)


def test_a_few_levels_of_aliases_decode_and_a_bomb_does_not() -> None:
    """go-yaml's own cases: 10^3 laughs decode, 10^4 are excessive, 9^9 too."""
    assert len(loads(laughs(3, 10))["a2"]) == 10
    with pytest.raises(YAMLDecodeError, match="yaml: document contains excessive aliasing"):
        loads(laughs(4, 10))
    with pytest.raises(YAMLDecodeError, match="yaml: document contains excessive aliasing"):
        loads(laughs(9, 9))


def test_aliases_become_copies_as_json_has_no_sharing() -> None:
    doc = loads("a: &x {b: [1]}\nc: *x\n")
    assert doc == {"a": {"b": [1]}, "c": {"b": [1]}}
    doc["c"]["b"].append(2)
    assert doc["a"]["b"] == [1]


def test_an_anchor_that_holds_itself_is_refused() -> None:
    with pytest.raises(YAMLDecodeError, match="contains itself"):
        loads("a: &x {b: *x}\n")


def test_nesting_is_bounded_also_through_aliases() -> None:
    inner = "[" * 60 + "]" * 60
    assert loads(f"a: &a {inner}\nb: " + "[" * 39 + "*a" + "]" * 39, max_depth=100)
    with pytest.raises(YAMLDecodeError, match="nested more than 100 levels deep"):
        loads(f"a: &a {inner}\nb: " + "[" * 40 + "*a" + "]" * 40, max_depth=100)


def test_as_sigs_k8s_io_yaml_converts_to_json() -> None:
    doc = loads(
        "1: one\ntrue: yes\nts: 2024-01-01T00:00:00Z\nbin: !!binary aGk=\n"
        "base: &b {x: 1, y: 2}\nmerged: {<<: *b, y: 3}\n"
    )
    assert doc == {"1": "one", "true": True, "ts": "2024-01-01T00:00:00Z", "bin": "aGk=",
                   "base": {"x": 1, "y": 2}, "merged": {"x": 1, "y": 3}}  # fmt: skip
    with pytest.raises(YAMLDecodeError, match="invalid map key"):
        loads("? [a, b]\n: 1\n")
    assert loads("") is None
    assert yamlcodec.loads(b"- a\n- b\n") == ["a", "b"]


def test_the_decoded_size_is_bounded_as_aliases_copy_big_scalars() -> None:
    """One alias of a big scalar is one node for go-yaml's count: 20,000 of a
    2 MiB string (60 KB of `*a,`) would decode to 40 GB of JSON."""
    big = "x" * (2 << 20)
    small = ",".join(str(i) for i in range(300))
    bomb = f"a: &a {big}\nc: [{small}]\nb: [{','.join(['*a'] * 20_000)}]\n"
    with pytest.raises(yamlcodec.DecodedTooLarge, match="decodes to more than 12582912 bytes"):
        loads(bomb)
    # a handful of copies is within the bound (four request bodies)
    assert len(loads(f"a: &a {big}\nb: [*a, *a, *a]\n")["b"]) == 3
    with pytest.raises(yamlcodec.DecodedTooLarge):
        loads(f"a: &a {big}\nb: [*a, *a, *a, *a, *a, *a]\n")
