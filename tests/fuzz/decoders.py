"""Fuzz targets: the YAML request decoder and JSON patch (issue 32), through
the REST front door's own functions.

`yaml_body`: a body as a client sends it with Content-Type application/yaml
goes through limits.check_body and rest.body.decode (api/yamlcodec.py):
alias bombs of every shape (nested "billion laughs", aliases of big
scalars, merge keys of merge keys, aliases under deep nesting, an anchor
inside itself), deep flow and block nesting, token soup, and valid
documents dumped from JSON values. Every input is refused with an API error
(400, 413, 422) or decodes to a JSON document within the bounds; a dumped
JSON value decodes to itself.

`json_patch`: a patch body as rest/patch.py takes it: decoded JSON, at most
json_patch.MAX_OPERATIONS operations, applied by json_patch.apply (its
copy-size limit), the result's depth checked and its stored size bounded.
Operations of every kind at pointers good and bad (escapes, `-`, leading
zeros, huge indexes), doubling copies, moves into themselves, deep adds,
10,001 operations, big values, non-objects. Every input is refused with an
API error or gives a result within the bounds; the object patched is never
modified; a single add or replace leaves its value at its path, a test
leaves the object as it was.

Both are measured for memory (the resident peak per input, tests/fuzz/runner.py).
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from hypothesis import strategies as st

from controlplane.api import json_patch, jsoncodec, limits, yamlcodec
from controlplane.apiserver.rest import body
from controlplane.client.errors import ApiError

# -- YAML bodies ----------------------------------------------------------------


def _laughs(levels: int, fanout: int, scalar: str) -> str:
    lines = [f"a0: &a0 [{', '.join([scalar] * fanout)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * fanout)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def _wide(size: int, aliases: int, padding: int) -> str:
    pad = ",".join(str(i) for i in range(padding))
    return f"a: &a {'x' * size}\np: [{pad}]\nb: [{','.join(['*a'] * aliases)}]\n"


def _merges(levels: int, fanout: int) -> str:
    lines = ["m0: &m0 {" + ", ".join(f"k{j}: v" for j in range(fanout)) + "}"]
    for i in range(1, levels):
        sources = ", ".join([f"*m{i - 1}"] * fanout)
        lines.append(
            f"m{i}: &m{i} {{<<: [{sources}], n{i}: [{', '.join([f'*m{i - 1}'] * fanout)}]}}"
        )
    return "\n".join(lines) + "\n"


def _nested(depth: int, flow: bool, alias_at_bottom: bool) -> str:
    leaf = "*a" if alias_at_bottom else "x"
    head = "a: &a [[[[[1]]]]]\nb: " if alias_at_bottom else ""
    if flow:
        return head + "[" * depth + leaf + "]" * depth + "\n"
    return (
        head + "\n" + "".join("  " * i + "- \n" for i in range(depth)) + "  " * depth + leaf + "\n"
    )


_TOKENS = ["&a ", "&b ", "*a", "*b", "<<: ", "[", "]", "{", "}", ": ", ", ", "- ", "\n", "  ",
           "? ", "!!binary ", "!!str ", "!!python/object:os.system ", "!!timestamp ", "|\n",
           ">-\n", "'q'", '"\\u00e9\\x00"', "#c", "---\n", "...\n", "%YAML 1.1\n", "1", "0x1F",
           "1e400", "~", "yes", "2001-12-14t21:59:43.10-05:00", "a", "é", "\t", "\x00", "\ufeff",
           "99999999999999999999999", ".nan", "-.inf", "@", "`"]  # fmt: skip
_json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
              st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20)),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=20,
)  # fmt: skip

yaml_inputs = st.one_of(
    st.builds(_laughs, st.integers(1, 10), st.integers(1, 12),
              st.sampled_from(["lol", "", "x" * 1000, "{k: v}", "[1, 2]"])),
    st.builds(_wide, st.sampled_from([0, 10, 4096, 1 << 20, 2 << 20]),
              st.sampled_from([0, 1, 7, 100, 1000, 20_000]), st.sampled_from([0, 5, 300, 2000])),
    st.builds(_merges, st.integers(1, 8), st.integers(1, 10)),
    st.builds(_nested, st.integers(0, 300), st.booleans(), st.booleans()),
    st.just("a: &x {b: *x}\n"),
    st.lists(st.sampled_from(_TOKENS), max_size=60).map("".join),
    st.tuples(st.just("json"), _json_value),
)  # fmt: skip


def check_yaml(inp: Any) -> str:
    expected: Any = None
    if isinstance(inp, tuple):
        expected = inp[1]
        data = yaml.safe_dump(expected).encode()  # (allow_unicode mangles U+0085)
    else:
        data = inp.encode("utf-8", "surrogatepass")
    try:
        limits.check_body(data)
        doc = body.decode(data, "application/yaml")
    except ApiError as exc:
        assert str(exc), "a refusal without a message"
        assert expected is None or len(data) > limits.MAX_BODY, f"a JSON value refused: {exc}"
        return "rejected"
    encoded = jsoncodec.dumps(doc)  # plain JSON values: nothing shared, nothing else
    assert len(encoded) <= 2 * yamlcodec.MAX_DECODED, f"decoded to {len(encoded)} bytes"
    if expected is not None:
        assert json.loads(encoded) == json.loads(jsoncodec.dumps(expected)), "round trip differs"
    return "ok"


# -- JSON patches ----------------------------------------------------------------

_BASE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "p", "namespace": "default", "labels": {"a": "1", "a/b": "2"}},
    "data": {"a": "x" * 100, "b": "y", "~": "t"},
    "items": [1, [2, 3], {"k": "v"}],
}
_BASE_JSON = jsoncodec.dumps(_BASE)
_POINTERS = ["", "/", "/data", "/data/a", "/data/b", "/data/new", "/data/~0", "/data/~1x",
             "/metadata/labels/a~1b", "/metadata/labels/~2", "/items", "/items/0", "/items/1/0",
             "/items/-", "/items/1/-", "/items/2/k", "/items/01", "/items/-1", "/items/3",
             "/items/99999999999999999999", "/kind", "/missing/deep", "data", "/data/a/b",
             "/items/1/1/0", "/metadata"]  # fmt: skip
_pointer = st.sampled_from(_POINTERS)
_some_value = st.one_of(_json_value, st.sampled_from(["x" * 70_000, {"d": "y" * 4096}]))
_op = st.one_of(
    # well formed, most of them applicable
    st.fixed_dictionaries(
        {"op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]),
         "path": _pointer, "value": _some_value, "from": _pointer},
    ),
    st.fixed_dictionaries(
        {"op": st.sampled_from(["add", "replace", "test"]),
         "path": st.sampled_from(["/data/a", "/data/new", "/items/0", "/items/-", "/metadata/labels/a"]),
         "value": _some_value},
    ),
    # anything
    st.fixed_dictionaries(
        {"op": st.one_of(st.sampled_from(["add", "bogus", ""]), st.integers(), st.none()),
         "path": st.one_of(_pointer, st.none(), st.integers(), st.text(max_size=6))},
        optional={"value": _some_value, "from": st.one_of(_pointer, st.integers())},
    ),
)  # fmt: skip


def _doubling(n: int) -> list[Any]:
    return [{"op": "copy", "from": "/data", "path": f"/data/k{i}"} for i in range(n)]


def _deep(n: int) -> list[Any]:
    return [{"op": "add", "path": "/x" + "/k" * i, "value": {}} for i in range(n)]


def _many(n: int) -> list[Any]:
    return [{"op": "test", "path": "/kind", "value": "ConfigMap"}] * n


def _into_itself(n: int) -> list[Any]:
    return [{"op": "move", "from": "/items", "path": "/items/1" + "/0" * (i % 3)} for i in range(n)]


patch_inputs = st.one_of(
    st.lists(_op, min_size=1, max_size=3),
    st.lists(_op, max_size=8),
    st.builds(_doubling, st.integers(0, 40)),
    st.builds(_deep, st.integers(0, 160)),
    st.builds(_many, st.sampled_from([1, 9_999, 10_000, 10_001])),
    st.builds(_into_itself, st.integers(1, 4)),
    st.one_of(_json_value, st.lists(st.one_of(st.integers(), st.none(), st.text()), max_size=3)),
)  # fmt: skip


def _at(doc: Any, pointer: str) -> Any:
    for token in json_patch.parse_pointer(pointer):
        doc = doc[int(token)] if isinstance(doc, list) else doc[token]
    return doc


def check_patch(ops: Any) -> str:
    old = jsoncodec.loads(_BASE_JSON)
    try:
        data = jsoncodec.dumps(ops)
        limits.check_body(data)
        doc = jsoncodec.loads(data)
        if not isinstance(doc, list):
            return "rejected"  # rest/patch.py: 400, a JSON patch must be an array
        if len(doc) > json_patch.MAX_OPERATIONS:
            return "rejected"  # rest/patch.py: 413
        new = json_patch.apply(old, doc)
        if not isinstance(new, dict):
            return "rejected"  # 422, the patched object must be a JSON object
        body.check_depth(new)
        stored = jsoncodec.dumps(new)
        limits.check_stored(len(stored), "configmaps", "p")
    except ApiError as exc:
        assert str(exc), "a refusal without a message"
        assert jsoncodec.dumps(old) == _BASE_JSON, "a refused patch modified the object"
        return "rejected"
    assert jsoncodec.dumps(old) == _BASE_JSON, "the patch modified the object it was applied to"
    if len(doc) == 1 and doc[0]["op"] in ("add", "replace"):
        path = doc[0]["path"]
        got = _at(new, path[:-2])[-1] if path.endswith("/-") else _at(new, path)
        assert got == doc[0]["value"], f"{doc[0]['op']} left another value at {path!r}"
    if doc and all(op.get("op") == "test" for op in doc):
        assert new == old, "a test changed the object"
    return "ok"
