"""Migrating an older data directory's stored objects to this skiff's format.

Storage format 1 (before the data directory recorded versions) could hold
an object in any apiVersion its kind is served at; format 2 keeps every
object in its kind's storage version. `migrate` rewrites each stored object
of another apiVersion, converted (the kind's Conversion to the stored
shape, or only the apiVersion where the shapes are the same), with a
compare-and-swap on its revision, as `kube-storage-version-migrator` does.
Objects of kinds this skiff does not know (custom resources: their CRD
says their storage version) are left as they are.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from controlplane.api import jsoncodec
from controlplane.api.kinds import UnknownKind, definitions
from controlplane.storage.interface import RevisionMismatch, Store

log = logging.getLogger("skiff.migrate")

ROOT = "/registry/"
PAGE = 500


def _converted(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The object in its kind's storage version; None when it already is."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    for d in definitions():
        info = d.info
        if info.kind != kind or api_version == info.api_version:
            continue
        conversion = d.conversions.get(api_version)
        if conversion is not None:
            return {**conversion.to_stored(obj), "apiVersion": info.api_version}
        if api_version in info.also_api_versions:
            return {**obj, "apiVersion": info.api_version}
    return None


def migrate(store: Store, from_format: int) -> int:
    """Rewrite every stored object not in its storage version; how many were."""
    rewritten, after = 0, ""
    while True:
        page = store.range(ROOT, start_after=after, limit=PAGE)
        for kv in page.items:
            try:
                obj = json.loads(kv.value)
            except ValueError:
                continue  # encrypted at rest, or not JSON: not an object to convert
            try:
                new = _converted(obj) if isinstance(obj, dict) else None
            except (UnknownKind, KeyError, TypeError, ValueError) as err:
                log.warning("%s: cannot convert (%s); left as it is", kv.key, err)
                continue
            if new is None:
                continue
            try:
                store.update(kv.key, jsoncodec.dumps(new), kv.mod_rev)
                rewritten += 1
            except RevisionMismatch:
                continue  # written meanwhile, by this skiff: already current
        if not page.more or not page.items:
            break
        after = page.items[-1].key
    log.info("data directory migrated from storage format %d: %d objects rewritten",
             from_format, rewritten)  # fmt: skip
    return rewritten
