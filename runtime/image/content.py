"""The content store: blobs on disk by digest, written atomically.

`blobs/sha256/<hex>` holds every manifest, config and compressed layer once.
New content is written to `ingest/` and moved into place (`machinery.atomicfile.publish`)
only after its digest and size were checked, so a killed writer leaves at most
a stray ingest file (removed at the next start), never a wrong blob. Digests
are validated before they become paths: a manifest cannot name a file outside
the store.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from machinery.atomicfile import publish
from runtime.image.errors import BadContent

_DIGEST_RE = re.compile(r"^sha256:([a-f0-9]{64})$")
CHUNK = 1 << 20


class Readable(Protocol):
    def read(self, n: int = -1, /) -> bytes: ...


def digest_hex(digest: str) -> str:
    """The hex of a `sha256:<64 hex>` digest; BadContent for anything else."""
    m = _DIGEST_RE.match(digest)
    if m is None:
        raise BadContent(f"unsupported or malformed digest {digest!r}")
    return m.group(1)


def pid_alive(text: str) -> bool:
    """Whether `text` is the pid of a running process (not ours to judge: a
    pid we cannot parse is a dead writer)."""
    if not text.isdigit():
        return False
    try:
        os.kill(int(text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sha256_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class HashingReader:
    """Reads from `source`, hashing (sha256) and counting what passes; optionally
    copies every byte to `tee` (the ingest file)."""

    def __init__(self, source: Readable, tee: int | None = None, limit: int | None = None) -> None:
        self._source = source
        self._tee = tee
        self._hash = hashlib.sha256()
        self._limit = limit
        self.size = 0

    def read(self, n: int = -1, /) -> bytes:
        if self._limit is not None:
            # Never take (or store) more than one byte beyond the declared size.
            room = self._limit - self.size + 1
            n = room if n < 0 else min(n, room)
        data = self._source.read(n)
        if data:
            if self._limit is not None and self.size + len(data) > self._limit:
                raise BadContent(f"blob is larger than the {self._limit} bytes its descriptor says")
            self._hash.update(data)
            self.size += len(data)
            if self._tee is not None:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._tee, view) :]
        return data

    def drain(self) -> None:
        while self.read(CHUNK):
            pass

    @property
    def digest(self) -> str:
        return "sha256:" + self._hash.hexdigest()


class Ingest:
    """One blob being written: `write`/`reader`, then `commit` (verify + rename)
    or `abort`. Use as a context manager: leaving without commit aborts."""

    def __init__(self, store: ContentStore, digest: str, size: int | None) -> None:
        self.store = store
        self.digest = digest
        self.expected_size = size
        name = f"{os.getpid()}-{digest_hex(digest)[:16]}-{uuid.uuid4().hex[:8]}"
        self.path = store.ingest_dir / name
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        self._committed = False

    def reader(self, source: Readable) -> HashingReader:
        limit = (
            self.expected_size
            if self.expected_size is not None and self.expected_size >= 0
            else None
        )
        return HashingReader(source, tee=self.fd, limit=limit)

    def commit(self, got: HashingReader) -> Path:
        """Check digest and size of what went through `got`, then publish."""
        if self.expected_size is not None and got.size != self.expected_size:
            raise BadContent(
                f"blob {self.digest}: got {got.size} bytes, the manifest says {self.expected_size}"
            )
        if got.digest != self.digest:
            raise BadContent(f"blob {self.digest}: content has digest {got.digest}")
        os.close(self.fd)
        self.fd = -1
        dest = self.store.path(self.digest)
        publish(self.path, dest)
        self._committed = True
        return dest

    def abort(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if not self._committed:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    def __enter__(self) -> Ingest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.abort()


class ContentStore:
    """Blobs under `<root>/blobs/sha256`, ingest files under `<root>/ingest`."""

    def __init__(self, root: Path) -> None:
        self.blob_dir = root / "blobs" / "sha256"
        self.ingest_dir = root / "ingest"
        self.blob_dir.mkdir(parents=True, exist_ok=True)
        self.ingest_dir.mkdir(parents=True, exist_ok=True)

    def clean_ingest(self) -> None:
        """Drop leftovers of killed writers: ingest files whose writing process
        (the pid their name starts with) is gone. Live writers, e.g. a runtime
        sharing this root with the CLI, keep theirs."""
        for entry in os.scandir(self.ingest_dir):
            if not pid_alive(entry.name.split("-", 1)[0]):
                try:
                    os.unlink(entry.path)
                except FileNotFoundError:
                    pass

    def path(self, digest: str) -> Path:
        return self.blob_dir / digest_hex(digest)

    def has(self, digest: str) -> bool:
        return self.path(digest).is_file()

    def size(self, digest: str) -> int:
        return self.path(digest).stat().st_size

    def read(self, digest: str) -> bytes:
        """A blob's bytes, re-verified (blobs read this way are small)."""
        data = self.path(digest).read_bytes()
        if sha256_of(data) != digest:
            raise BadContent(f"stored blob {digest} is corrupt")
        return data

    def write(self, digest: str, data: bytes) -> None:
        if self.has(digest):
            return
        if sha256_of(data) != digest:
            raise BadContent(f"blob {digest}: content has digest {sha256_of(data)}")
        with self.ingest(digest, len(data)) as ing:
            r = ing.reader(_BytesReader(data))
            r.drain()
            ing.commit(r)

    def ingest(self, digest: str, size: int | None) -> Ingest:
        return Ingest(self, digest, size)

    def delete(self, digest: str) -> None:
        try:
            os.unlink(self.path(digest))
        except FileNotFoundError:
            pass

    def digests(self) -> Iterator[str]:
        for entry in os.scandir(self.blob_dir):
            if _DIGEST_RE.match("sha256:" + entry.name):
                yield "sha256:" + entry.name


class _BytesReader:
    def __init__(self, data: bytes) -> None:
        self._view = memoryview(data)

    def read(self, n: int = -1, /) -> bytes:
        if n < 0:
            n = len(self._view)
        out, self._view = bytes(self._view[:n]), self._view[n:]
        return out
