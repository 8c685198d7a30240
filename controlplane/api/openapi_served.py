"""The OpenAPI documents as served: each built at the first request for it
and again only when what it describes changes, held as the bytes sent.

- One OpenAPI 3.0 document per group/version (`/openapi/v3/<key>`): its
  JSON and its ETag (the upper-case hex SHA-512 of that JSON, as
  kube-apiserver's), rebuilt when the kinds served at that group/version
  or their CRD's schema change, not when another group's do: as
  kube-apiserver's OpenAPI v3 controller updates only the changed CRD's
  group/version, and builds each document lazily.
- The `/openapi/v3` index: every group/version's URL with its document's
  hash (so every document is built by then; after a CRD change only the
  changed ones again).
- `/openapi/v2` (one document of every kind: Kubernetes too rebuilds it
  whole) and its protobuf form, each at its first request after a change.

A state of the kinds table (its rows' identity and crd.generation()) is
looked up per request, never walked. Thread-safe; documents are read-only.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from controlplane.api import crd, jsoncodec, kinds, openapi_pb
from controlplane.api.openapi_doc import (
    CustomVersions,
    Entry,
    custom_versions,
    document,
    key,
    served,
)
from controlplane.api.openapi_etag import Served, etag_of
from controlplane.client.errors import NotFound

# What one group/version's document is built from: its entries, and the
# identity of each custom kind's served version (a CRD change makes new ones).
_Signature = tuple[tuple[Entry, int], ...]


@dataclass
class _Built:
    signature: _Signature
    pins: tuple[crd.ServedVersion, ...]  # keeps the ids of the signature alive
    served: Served


@dataclass
class _State:
    """The documents of one state of the kinds table, filled as asked for."""

    rows: tuple[kinds.KindInfo, ...]
    generation: int
    entries: list[Entry]
    by_key: dict[str, list[Entry]]
    custom: CustomVersions
    v3: dict[str, Served] = field(default_factory=dict)
    index: dict[str, Any] | None = None
    v2: dict[str, Any] | None = None
    v2_json: bytes | None = None
    v2_protobuf: bytes | None = None


_lock = threading.RLock()
_state: _State | None = None
_built: dict[str, _Built] = {}  # by key, across states: reused while its signature holds


def _current() -> _State:
    rows, generation = kinds.all_kinds(), crd.generation()
    state = _state
    if state is not None and state.rows is rows and state.generation == generation:
        return state
    return _renew(rows, generation)


def _renew(rows: tuple[kinds.KindInfo, ...], generation: int) -> _State:
    global _state
    with _lock:
        state = _state
        if state is not None and state.rows is rows and state.generation == generation:
            return state
        entries = list(served())
        by_key: dict[str, list[Entry]] = {}
        for entry in entries:
            by_key.setdefault(key(entry[0], entry[1]), []).append(entry)
        state = _State(rows, generation, entries, by_key, custom_versions())
        for gone in set(_built) - set(by_key):
            del _built[gone]
        _state = state
        return state


def _v3(state: _State, gv: str) -> Served:
    found = state.v3.get(gv)
    if found is not None:
        return found
    entries = state.by_key.get(gv)
    if entries is None:
        raise NotFound(f"the server does not serve group/version {gv}")
    with _lock:
        customs = [state.custom.get((e[0], e[1], e[2].kind)) for e in entries]
        signature = tuple(
            (e, id(c) if c is not None else 0) for e, c in zip(entries, customs, strict=True)
        )
        pins = tuple(c for c in customs if c is not None)
        built = _built.get(gv)
        if built is None or built.signature != signature:
            body = jsoncodec.dumps(document(entries, state.custom, v3=True))
            built = _Built(signature, pins, Served(body, etag_of(body)))
            _built[gv] = built
        state.v3[gv] = built.served
        return built.served


def v3_served(group: str, version: str) -> Served:
    """The OpenAPI 3.0 document of one group/version ("" is the core group),
    as sent. Raises errors.NotFound for a group/version skiff does not serve."""
    return _v3(_current(), key(group, version))


def v3(group: str, version: str) -> dict[str, Any]:
    """The OpenAPI 3.0 document of one group/version, decoded (a fresh copy)."""
    doc: dict[str, Any] = jsoncodec.loads(v3_served(group, version).body)
    return doc


def v3_paths() -> dict[str, Any]:
    """The `/openapi/v3` index: each group/version's document URL with its
    hash (read-only)."""
    state = _current()
    if state.index is None:
        paths = {
            gv: {"serverRelativeURL": f"/openapi/v3/{gv}?hash={_v3(state, gv).etag}"}
            for gv in sorted(state.by_key)
        }
        state.index = {"paths": paths}
    return state.index


def _v2(state: _State) -> dict[str, Any]:
    if state.v2 is None:
        with _lock:
            if state.v2 is None:
                state.v2 = document(state.entries, state.custom, v3=False)
    return state.v2


def v2() -> dict[str, Any]:
    """The Swagger 2.0 document of every served kind (read-only)."""
    return _v2(_current())


def v2_json() -> bytes:
    """`v2()` as JSON."""
    state = _current()
    if state.v2_json is None:
        state.v2_json = jsoncodec.dumps(_v2(state))
    return state.v2_json


def v2_protobuf() -> bytes:
    """`v2()` as the openapi.v2.Document protobuf kubectl asks for."""
    state = _current()
    if state.v2_protobuf is None:
        state.v2_protobuf = openapi_pb.encode_v2(_v2(state))
    return state.v2_protobuf
