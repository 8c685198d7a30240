"""Content-addressed blobs for test images: digests, media types, a blob store.

A `BlobStore` is a directory of `sha256/<hex>` files, written atomically
(temporary file, then `os.replace`), so a blob built once per session is
shared by every image, layout and push that uses it. This module never talks
to a registry and never reads outside the store it is given.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol

# OCI image-spec media types.
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar"
OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
OCI_LAYER_ZSTD = "application/vnd.oci.image.layer.v1.tar+zstd"

# Docker image manifest v2 schema 2 media types.
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar"
DOCKER_LAYER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip"

MANIFEST_TYPES = (OCI_MANIFEST, DOCKER_MANIFEST)
INDEX_TYPES = (OCI_INDEX, DOCKER_MANIFEST_LIST)
# What a client sends as Accept to get any of the above back unconverted.
ACCEPT_ALL = ", ".join((*MANIFEST_TYPES, *INDEX_TYPES))

_CHUNK = 1 << 20


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def canonical_json(obj: Any) -> bytes:
    """Compact JSON in insertion order: the same object gives the same bytes."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def split_digest(digest: str) -> str:
    """The hex part of a `sha256:<hex>` digest; refuses anything else."""
    algo, _, hexpart = digest.partition(":")
    if algo != "sha256" or len(hexpart) != 64 or not all(c in "0123456789abcdef" for c in hexpart):
        raise ValueError(f"not a sha256 digest: {digest!r}")
    return hexpart


@dataclass(frozen=True)
class Blob:
    """One stored blob and the media type it is referenced with."""

    media_type: str
    digest: str
    size: int
    path: Path

    def descriptor(self, **extra: Any) -> dict[str, Any]:
        desc: dict[str, Any] = {
            "mediaType": self.media_type,
            "digest": self.digest,
            "size": self.size,
        }
        desc.update({k: v for k, v in extra.items() if v})
        return desc

    def read_bytes(self) -> bytes:
        return self.path.read_bytes()

    def open(self) -> BinaryIO:
        return open(self.path, "rb")


class Writable(Protocol):
    def write(self, data: bytes, /) -> object: ...

    def flush(self) -> object: ...


class HashingWriter:
    """A write-only file object that hashes and counts what passes through it
    and forwards it to `sink` (if any)."""

    def __init__(self, sink: Writable | None = None) -> None:
        self._sink = sink
        self._hash = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes, /) -> int:
        self._hash.update(data)
        self.size += len(data)
        if self._sink is not None:
            self._sink.write(data)
        return len(data)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        if self._sink is not None:
            self._sink.flush()

    @property
    def digest(self) -> str:
        return "sha256:" + self._hash.hexdigest()


class BlobStore:
    """A directory of blobs named by their sha256 digest."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "sha256").mkdir(parents=True, exist_ok=True)

    def path(self, digest: str) -> Path:
        return self.root / "sha256" / split_digest(digest)

    def has(self, digest: str) -> bool:
        return self.path(digest).exists()

    def add_bytes(self, data: bytes, media_type: str) -> Blob:
        digest = sha256_digest(data)
        path = self.path(digest)
        if not path.exists():
            with self.temp_file() as (f, tmp):
                f.write(data)
            os.replace(tmp, path)
        return Blob(media_type, digest, len(data), path)

    def add_file(self, tmp: Path, media_type: str, digest: str | None = None) -> Blob:
        """Move `tmp` (made by `temp_file`) into the store under its digest."""
        digest = digest or file_digest(tmp)
        path = self.path(digest)
        size = tmp.stat().st_size
        os.replace(tmp, path)
        return Blob(media_type, digest, size, path)

    def blob(self, digest: str, media_type: str) -> Blob:
        path = self.path(digest)
        return Blob(media_type, digest, path.stat().st_size, path)

    def temp_file(self) -> _TempFile:
        return _TempFile(self.root)


class _TempFile:
    """`with store.temp_file() as (f, path)`: a file in the store's directory
    (same filesystem, so `os.replace` into place is atomic); removed if the
    block raises."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._path: Path | None = None
        self._file: BinaryIO | None = None

    def __enter__(self) -> tuple[BinaryIO, Path]:
        fd, name = tempfile.mkstemp(prefix=".tmp-", dir=self._root)
        self._path = Path(name)
        self._file = os.fdopen(fd, "wb")
        return self._file, self._path

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        assert self._file is not None and self._path is not None
        self._file.close()
        if exc_type is not None:
            self._path.unlink(missing_ok=True)
