"""Fuzz target: image indexes (OCI index, Docker manifest list) and the
platform a pull selects from them (issue 17).

Each input is an index of descriptors with platforms drawn from a small
set (so matches happen), bad shapes among them, and a wanted platform. The
index is refused as BadContent, or the selection is checked against the
rules written out independently here: a descriptor matches on os and
architecture, a manifest media type (or none), and an equal variant, or
either variant empty; an exact variant wins over the first loose match;
attestations (unknown/unknown) never match.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from runtime.image import mediatypes
from runtime.image.errors import BadContent
from runtime.image.pull import validate_manifest_doc

_D = "sha256:" + "a" * 64
_OS = ["linux", "windows", "unknown", "", "Linux"]
_ARCH = ["amd64", "arm64", "arm", "unknown", ""]
_VARIANT = ["", "v7", "v8", "v6"]
_MEDIA = [mediatypes.OCI_MANIFEST, mediatypes.DOCKER_MANIFEST, mediatypes.OCI_INDEX,
          "application/vnd.in-toto+json", None, ""]  # fmt: skip

_platform: st.SearchStrategy[Any] = st.one_of(
    st.fixed_dictionaries(
        {"os": st.sampled_from(_OS), "architecture": st.sampled_from(_ARCH)},
        optional={"variant": st.sampled_from(_VARIANT),
                  "os.features": st.just(["win32k"]), "os.version": st.just("10.0")},
    ),
    st.sampled_from([None, [], "linux/amd64", {"os": 1}, {"os": "linux", "architecture": None}]),
    st.just({"os": "linux", "architecture": "amd64"}),
)  # fmt: skip
_descriptor = st.one_of(
    st.builds(
        lambda media, plat, size, digest, drop: {
            k: v for k, v in (("mediaType", media), ("digest", digest), ("size", size),
                              ("platform", plat)) if k not in drop and v is not None
        },
        st.sampled_from(_MEDIA),
        _platform,
        st.sampled_from([5] * 30 + [0, -1, 2**50, "5", True, 1.5]),
        st.sampled_from([_D] * 15 + ["sha256:" + "b" * 64] * 15 + ["md5:x", "", 5]),
        st.sampled_from([()] * 12 + [("mediaType",), ("digest",), ("size",), ("platform",)]),
    ),
    st.sampled_from([None, "x", [], 3]),
)  # fmt: skip
_descriptor = st.one_of(*[_descriptor.filter(lambda d: isinstance(d, dict))] * 8, _descriptor)
index_inputs = st.tuples(
    st.fixed_dictionaries(
        {"manifests": st.lists(_descriptor, max_size=6)},
        optional={"schemaVersion": st.sampled_from([2, 1, "2"]),
                  "mediaType": st.sampled_from([mediatypes.OCI_INDEX,
                                                mediatypes.DOCKER_MANIFEST_LIST, 5, ""])},
    ),
    st.tuples(st.sampled_from(_OS[:2]), st.sampled_from(_ARCH[:3]), st.sampled_from(_VARIANT)),
)  # fmt: skip


def _expected(index: dict[str, Any], want: tuple[str, str, str]) -> list[dict[str, Any]]:
    """The descriptors a correct selection may return, best first."""
    os_, arch, variant = want
    exact: list[dict[str, Any]] = []
    loose: list[dict[str, Any]] = []
    for desc in index["manifests"]:
        plat = desc.get("platform") or {}
        if (plat.get("os"), plat.get("architecture")) != (os_, arch):
            continue
        if desc.get("mediaType") not in (*mediatypes.MANIFEST_TYPES, None):
            continue
        got = plat.get("variant", "")
        if got == variant:
            exact.append(desc)
        elif not got or not variant:
            loose.append(desc)
    if exact:
        return exact[:1]
    return loose[:1]


def check_index(inp: tuple[dict[str, Any], tuple[str, str, str]]) -> str:
    index, want = inp
    doc = json.loads(json.dumps(index))  # as decoded from the registry's bytes
    try:
        validate_manifest_doc(doc, "fuzzed index")
    except BadContent as exc:
        assert "\n" not in str(exc)
        return "rejected"
    kind = mediatypes.detect_type(doc, "")
    assert isinstance(kind, str)
    chosen = mediatypes.select_platform(doc, want)
    expected = _expected(doc, want)
    if not expected:
        assert chosen is None, f"selected {chosen} for {want}"
        return "rejected"  # no manifest for the platform: the pull says NotFound
    assert chosen == expected[0], f"selected {chosen}, expected {expected[0]} for {want}"
    plat = chosen.get("platform") or {}
    assert (plat.get("os"), plat.get("architecture")) == want[:2]
    assert isinstance(chosen["digest"], str) and isinstance(chosen["size"], int)
    return "ok"
