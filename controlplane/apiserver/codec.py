"""The registry's stored form: the JSON an object is kept as, and its key.

Objects are stored as compact JSON without metadata.resourceVersion (the
store's mod revision is the resourceVersion). Read paths hand back the stored
bytes untouched with their revision (`with_version` writes the revision in
without decoding), so a List of many objects is never decoded and re-encoded
unless a selector needs to look inside.
"""

from __future__ import annotations

import random
from typing import Any

from controlplane.api import jsoncodec, limits
from controlplane.api.kinds import KindInfo, UnknownKind, by_kind
from controlplane.client.errors import Invalid

Object = dict[str, Any]
Stored = tuple[bytes, int]  # (JSON without resourceVersion, resourceVersion)

ROOT = "/registry/"
_NOT_SPEC = frozenset({"apiVersion", "kind", "metadata", "status"})
_HEAD = ("apiVersion", "kind", "metadata")
_META = b'"metadata":{'


def encode(obj: Object) -> bytes:
    """The stored form: without resourceVersion, and with apiVersion, kind and
    metadata first, so `with_version` finds the object's own metadata at once."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "resourceVersion" in meta:
        meta = dict(meta)
        del meta["resourceVersion"]
        obj = {**obj, "metadata": meta}
    head = [k for k in _HEAD if k in obj]
    if list(obj)[: len(head)] != head:
        obj = {**{k: obj[k] for k in head}, **{k: v for k, v in obj.items() if k not in _HEAD}}
    data = jsoncodec.dumps(obj)
    limits.check_integers(data, obj)
    return data


def with_version(data: bytes, rev: int) -> bytes:
    """The stored JSON with metadata.resourceVersion written in, without decoding
    it. Only apiVersion and kind (strings: no `{` in them) may precede metadata;
    anything else stored takes the slow way."""
    at = data.find(_META)
    if at > 0 and data.find(b"{", 1) == at + len(_META) - 1:
        at += len(_META)
        sep = b"" if data[at : at + 1] == b"}" else b","
        return b'%s"resourceVersion":"%d"%s%s' % (data[:at], rev, sep, data[at:])
    return jsoncodec.dumps(decode(data, rev))


def decode(data: bytes, rev: int | None = None) -> Object:
    obj: Object = jsoncodec.loads(data)
    if rev is not None:
        obj.setdefault("metadata", {})["resourceVersion"] = str(rev)
    return obj


def new_uid() -> str:
    """A random (version 4) UUID string, as str(uuid.uuid4()) but cheaper: from
    the random module (seeded from os.urandom, reseeded in forked children), so
    no system call per uid (a uid must be unique, not secret)."""
    h = f"{random.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


def kind_info(kind: str) -> KindInfo:
    try:
        return by_kind(kind)
    except UnknownKind as err:
        raise Invalid(str(err)) from err


def kind_prefix(info: KindInfo) -> str:
    return f"{ROOT}{info.storage_name}/"


def object_key(info: KindInfo, namespace: str, name: str) -> str:
    if info.namespaced:
        return f"{ROOT}{info.storage_name}/{namespace}/{name}"
    return f"{ROOT}{info.storage_name}/{name}"


def list_prefix(info: KindInfo, namespace: str) -> str:
    if info.namespaced and namespace:
        return f"{ROOT}{info.storage_name}/{namespace}/"
    return kind_prefix(info)


def parse_rv(value: Any, what: str = "metadata.resourceVersion") -> int:
    try:
        rv = int(str(value))
    except ValueError as err:
        raise Invalid(f"{what}: {value!r} is not a valid resourceVersion") from err
    if rv < 0:
        raise Invalid(f"{what}: must be >= 0")
    return rv


def spec_part(obj: Object) -> Object:
    return {k: v for k, v in obj.items() if k not in _NOT_SPEC}


def meta_of(obj: Object) -> Object:
    meta = obj.get("metadata")
    if meta is None:
        meta = {}
        obj["metadata"] = meta
    if not isinstance(meta, dict):
        raise Invalid("metadata: must be an object")
    return meta
