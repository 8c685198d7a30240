"""The snapshot file: what a restore checks before it replaces anything.

Layout: the line `SKIFF-SNAPSHOT 1`, one line of JSON metadata, then the
payload (the store's own backup: a SQLite database, or an etcd snapshot).
The metadata names the store kind, the skiff version and storage format
that wrote it, when, the payload's size and its SHA-256; `read` refuses a
file whose magic, metadata, size (truncated) or checksum (corrupt) is wrong,
with the reason, so a damaged snapshot is never restored.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from machinery import atomicfile

MAGIC = b"SKIFF-SNAPSHOT 1\n"
MAX_HEADER = 64 << 10
CHUNK = 1 << 20


class SnapshotError(Exception):
    """A snapshot cannot be used; the message says why."""


@dataclass(frozen=True)
class Metadata:
    store: str  # "sqlite" or "etcd"
    created: str  # RFC 3339, UTC
    skiff_version: str
    storage_format: int
    size: int
    sha256: str
    node: str = ""
    revision: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "created": self.created,
            "skiffVersion": self.skiff_version,
            "storageFormat": self.storage_format,
            "size": self.size,
            "sha256": self.sha256,
            "node": self.node,
            "revision": self.revision,
        }


def write(path: Path, payload: Path, meta: Metadata) -> None:
    """Write a snapshot of `payload` (a file) to `path` atomically (0600)."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(MAGIC)
            out.write(json.dumps(meta.to_json(), sort_keys=True).encode() + b"\n")
            with payload.open("rb") as src:
                while chunk := src.read(CHUNK):
                    out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        atomicfile.publish(tmp, path, durable=True)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def digest(path: Path) -> tuple[int, str]:
    """(size, SHA-256 hex) of a file."""
    with path.open("rb") as f:
        return _read_all(f)


def _read_all(f: BinaryIO, out: BinaryIO | None = None) -> tuple[int, str]:
    """(size, SHA-256 hex) of what is left in `f`, copied to `out` if given."""
    h = hashlib.sha256()
    size = 0
    while chunk := f.read(CHUNK):
        h.update(chunk)
        size += len(chunk)
        if out is not None:
            out.write(chunk)
    return size, h.hexdigest()


def _header(f: BinaryIO, path: Path) -> Metadata:
    if f.read(len(MAGIC)) != MAGIC:
        raise SnapshotError(f"{path}: not a skiff snapshot (no SKIFF-SNAPSHOT header)")
    line = f.readline(MAX_HEADER)
    if not line.endswith(b"\n"):
        raise SnapshotError(f"{path}: truncated: the metadata line is incomplete")
    try:
        raw = json.loads(line)
        return Metadata(
            store=str(raw["store"]),
            created=str(raw["created"]),
            skiff_version=str(raw["skiffVersion"]),
            storage_format=int(raw["storageFormat"]),
            size=int(raw["size"]),
            sha256=str(raw["sha256"]),
            node=str(raw.get("node", "")),
            revision=int(raw.get("revision", 0)),
        )
    except (ValueError, KeyError, TypeError) as err:
        raise SnapshotError(f"{path}: the metadata is damaged ({err})") from None


def metadata(path: Path) -> Metadata:
    """The metadata alone (for `ls`); raises SnapshotError on a bad header."""
    try:
        with path.open("rb") as f:
            return _header(f, path)
    except OSError as err:
        raise SnapshotError(f"{path}: {err.strerror or err}") from None


def extract(path: Path, dest: Path) -> Metadata:
    """Check the whole snapshot and write its payload to `dest`.

    Raises SnapshotError, naming the problem, when the payload is shorter or
    longer than the metadata says (truncated) or its SHA-256 differs (corrupt);
    `dest` is then removed."""
    try:
        with path.open("rb") as f:
            meta = _header(f, path)
            with dest.open("wb") as out:
                size, sha256 = _read_all(f, out)
    except OSError as err:
        dest.unlink(missing_ok=True)
        raise SnapshotError(f"{path}: {err.strerror or err}") from None
    except SnapshotError:
        dest.unlink(missing_ok=True)
        raise
    problem = ""
    if size < meta.size:
        problem = f"truncated: {size} of {meta.size} payload bytes present"
    elif size > meta.size:
        problem = f"corrupt: {size} payload bytes where the metadata says {meta.size}"
    elif sha256 != meta.sha256:
        problem = f"corrupt: the payload's SHA-256 is {sha256}, not {meta.sha256}"
    if problem:
        dest.unlink(missing_ok=True)
        raise SnapshotError(f"{path}: {problem}; refusing to restore it")
    return meta
