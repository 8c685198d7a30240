"""Fuzz target: API objects and patches (issue 17) against a real registry
on SQLite in /dev/shm (memory).

Each input is one write as a client sends it, as JSON bytes through the
front door's checks (size, depth, decode): a create, an update of a stored
object, or a JSON merge patch, a JSON patch or a strategic merge patch of
one, with values of every type at chosen paths: deep nesting, big bodies,
unicode, integers past 2^64, floats. Every input gets a clear error (an
ApiError, or the decoder's refusal the front door turns into 400) or a
correct result: the stored object reads back as written, the patch's own
result is what was stored, and a refused write changes nothing. An object
no input targets stays byte-for-byte the same throughout.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from controlplane.api import json_patch, jsoncodec, limits, strategic_merge
from controlplane.api.merge_patch import merge_patch
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import ApiError, Invalid
from controlplane.storage.sqlite import SqliteStore

NS = "default"
_DEPLOYMENT: dict[str, Any] = {
    "metadata": {"name": "d", "namespace": NS, "labels": {"app": "a"}},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "a"}},
        "template": {
            "metadata": {"labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "ports": [{"containerPort": 80}]}]},
        },
    },
}  # fmt: skip
_CONFIGMAP: dict[str, Any] = {"metadata": {"name": "t", "namespace": NS}, "data": {"a": "1"}}
_KEEP: dict[str, Any] = {"metadata": {"name": "keep", "namespace": NS}, "data": {"k": "v"}}


class _World:
    registry: Registry


_world = _World()


@contextlib.contextmanager
def api_session() -> Iterator[object]:
    base = Path(tempfile.mkdtemp(prefix="fuzz-api-", dir="/dev/shm"))
    store = SqliteStore(base / "state.db")
    try:
        reg = Registry(store)
        reg.create("Namespace", {"metadata": {"name": NS}})
        for kind, obj in (("ConfigMap", _CONFIGMAP), ("ConfigMap", _KEEP),
                          ("Deployment", _DEPLOYMENT)):  # fmt: skip
            reg.create(kind, obj)
        _world.registry = reg
        yield reg
    finally:
        store.close()
        shutil.rmtree(base, ignore_errors=True)


# -- inputs -------------------------------------------------------------------

_big_ints = st.sampled_from([2**63 - 1, 2**63, 2**64, 2**64 + 1, -(2**63) - 1, 10**30, -(10**40)])
_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**31), 2**31), _big_ints,
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([1e308, -0.0, 0.5]),
    st.text(max_size=12),
    st.sampled_from(["", "a", "é\u200b", "\U0001f600", "x\x00y", "\ud800", "$patch", "delete",
                     "replace", "c", "busybox", "TCP", "80", "a" * 300]),
)  # fmt: skip
_value = st.one_of(
    st.recursive(
        _scalar,
        lambda kids: (
            st.lists(kids, max_size=3)
            | st.dictionaries(
                st.sampled_from(["name", "image", "containerPort", "a", "$patch", "k", "ports",
                                 "data", "labels", "x", "\u00e9", ""]),
                kids, max_size=3,
            )
        ),
        max_leaves=8,
    ),
    st.tuples(st.sampled_from(["deep", "wide", "big"]), st.integers(0, 140)),
)  # fmt: skip
_PATHS = [
    [], ["data"], ["data", "a"], ["data", "new"], ["binaryData", "b"], ["metadata"],
    ["metadata", "name"], ["metadata", "namespace"], ["metadata", "labels", "x"],
    ["metadata", "annotations", "n"], ["metadata", "finalizers"],
    ["metadata", "resourceVersion"], ["metadata", "uid"], ["kind"], ["apiVersion"],
    ["status"], ["spec", "replicas"], ["spec", "selector"],
    ["spec", "template", "spec", "containers"],
    ["spec", "template", "spec", "containers", "0", "image"],
    ["spec", "template", "spec", "containers", "0", "ports"],
    ["spec", "template", "spec", "containers", "-"],
    ["spec", "template", "spec", "$setElementOrder/containers"],
    ["spec", "template", "spec", "$retainKeys"],
    ["metadata", "$deleteFromPrimitiveList/finalizers"], ["$patch"],
]  # fmt: skip
api_inputs = st.tuples(
    st.sampled_from(["create", "update", "merge", "json", "strategic"]),
    st.sampled_from(["ConfigMap", "Deployment"]),
    st.sampled_from(_PATHS),
    _value,
    st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "bogus"]),
)


def _expand(value: Any) -> Any:
    """Shorthands for the shapes Hypothesis would take long to build."""
    if isinstance(value, tuple):
        shape, n = value
        if shape == "deep":
            out: Any = "x"
            for _ in range(n):
                out = {"a": [out]}
            return out
        if shape == "wide":
            return {f"k{i}": "v" * n for i in range(n * 10)}
        return "b" * (n * 16384)  # up to 2.2 MiB: past the stored-object limit
    return value


def _nest(path: list[str], value: Any) -> Any:
    for key in reversed(path):
        value = {key: value}
    return value


def _set(doc: Any, path: list[str], value: Any) -> Any:
    if not path:
        return value
    if isinstance(doc, list):
        if path[0].isdigit() and int(path[0]) < len(doc):
            i = int(path[0])
            return [*doc[:i], _set(doc[i], path[1:], value), *doc[i + 1 :]]
        return [*doc, _nest(path[1:], value)]
    base = doc if isinstance(doc, dict) else {}
    return {**base, path[0]: _set(base.get(path[0]), path[1:], value)}


def _name(kind: str) -> str:
    return "d" if kind == "Deployment" else "t"


def _snapshot(reg: Registry) -> dict[str, tuple[bytes, int]]:
    return {f"{kind}/{name}": reg.get(kind, name, NS) for kind, name in
            (("ConfigMap", "t"), ("ConfigMap", "keep"), ("Deployment", "d"))}  # fmt: skip


def _front_door(doc: Any) -> Any:
    """What the REST front door does with a body: size and depth, then decode."""
    body = json.dumps(doc).encode()
    limits.check_body(body)
    try:
        return jsoncodec.loads(body)
    except (ValueError, UnicodeDecodeError, jsoncodec.DecodeError):
        raise Invalid("the body is not valid JSON") from None


def _ints_fit(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return -(2**63) <= value < 2**63
    if isinstance(value, dict):
        return all(_ints_fit(v) for v in value.values())
    if isinstance(value, list):
        return all(_ints_fit(v) for v in value)
    return True


def check_api(inp: tuple[str, str, list[str], Any, str]) -> str:
    op, kind, path, raw, jop = inp
    reg = _world.registry
    value = _expand(raw)
    name = _name(kind)
    before = _snapshot(reg)
    old = json.loads(before[f"{kind}/{name}"][0])
    fresh = f"n{abs(hash((op, repr(path)))) % 1000}"
    expected: Any = None
    try:
        if op == "create":
            template = _DEPLOYMENT if kind == "Deployment" else _CONFIGMAP
            obj = _front_door(_set(_set(template, ["metadata", "name"], fresh), path, value))
            data, _ = reg.create(kind, obj, NS)
        elif op == "update":
            obj = _front_door(_set(old, path, value))
            data, _ = reg.update(kind, obj)
        elif op == "merge":
            patch = _front_door(_nest(path, value))
            expected = merge_patch(old, patch) if isinstance(patch, dict) else None
            data, _ = reg.patch(kind, name, patch, NS)
        elif op == "json":
            pointer = "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in path)
            ops = _front_door([{"op": jop, "path": pointer, "value": value, "from": "/data/a"}])
            data, _ = reg.patch_with(kind, name, lambda o: _object(json_patch.apply(o, ops)), NS)
        else:
            patch = _front_door(_nest(path, value))
            if not isinstance(patch, dict):
                raise Invalid("a strategic merge patch must be a JSON object")
            data, _ = reg.patch_with(
                kind, name, lambda o: strategic_merge.apply(o, patch, kind), NS
            )
    except ApiError as exc:
        assert str(exc), "an error without a message"
        after = _snapshot(reg)
        assert after == before, f"a refused {op} changed what was stored"
        if op == "create":
            assert not _exists(reg, kind, fresh), "a refused create stored the object"
        return "rejected"
    # accepted: stored as returned, integers in range, the untargeted object untouched
    got = json.loads(data)
    stored_name = got["metadata"]["name"]
    stored = json.loads(reg.get(kind, stored_name, NS)[0])
    got["metadata"].pop("resourceVersion", None)
    stored["metadata"].pop("resourceVersion", None)
    assert stored == got, "the stored object differs from the returned one"
    assert _ints_fit(got), "an integer past 64 bits was stored"
    assert _snapshot(reg)["ConfigMap/keep"] == before["ConfigMap/keep"]
    if op == "merge" and kind == "ConfigMap" and expected is not None:
        assert got.get("data") == expected.get("data"), "merge patch result differs"
    if op == "create" and reg.delete(kind, stored_name, NS) is not None:
        reg.patch(kind, stored_name, {"metadata": {"finalizers": None}}, NS)  # let it go
    return "ok"


def _object(new: Any) -> Any:
    if not isinstance(new, dict):
        raise Invalid("the patched object must be a JSON object")
    return new


def _exists(reg: Registry, kind: str, name: str) -> bool:
    try:
        reg.get(kind, name, NS)
    except ApiError:
        return False
    return True
