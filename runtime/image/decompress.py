"""Layer decompression: a reader of the uncompressed tar inside a layer
blob, chosen by the stream's magic bytes (gzip, possibly multi-member; zstd;
or plain tar), so a mislabelled media type still works. Streaming, bounded
output per read; truncation is an error. zlib-ng inflates where installed.
Nothing here writes anywhere.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Protocol

import zstandard

from runtime.image.content import CHUNK, Readable
from runtime.image.errors import BadContent

_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

# Decompressed bytes handed out per call. Larger outputs are slower, not
# faster: every call allocates a fresh buffer, and past a few hundred KiB
# those come from mmap and pay page faults, where a 256 KiB one stays warm
# in the allocator and the cache.
OUT_CHUNK = 256 << 10
_IN = 256 << 10


class _Inflater(Protocol):
    @property
    def unconsumed_tail(self) -> bytes: ...
    @property
    def unused_data(self) -> bytes: ...
    @property
    def eof(self) -> bool: ...

    def decompress(self, data: bytes | memoryview, max_length: int = 0, /) -> bytes: ...


def _stdlib_inflater() -> _Inflater:
    return zlib.decompressobj(wbits=31)


_new_inflater: Callable[[], _Inflater] = _stdlib_inflater
_inflate_errors: tuple[type[BaseException], ...] = (zlib.error,)
INFLATE_BACKEND = "zlib"
try:
    # zlib-ng inflates (and CRCs) several times faster than the stdlib's zlib
    # 1.2 on the same input, with the same API; the stdlib is the fallback.
    from zlib_ng import zlib_ng as _zng
except ImportError:  # pragma: no cover - depends on what is installed
    pass
else:

    def _zng_inflater() -> _Inflater:
        return _zng.decompressobj(wbits=31)

    _new_inflater = _zng_inflater
    _inflate_errors = (zlib.error, _zng.error)  # type: ignore[assignment]
    INFLATE_BACKEND = "zlib-ng"


class _Prefixed:
    """`source` with `head` (already read from it) put back in front."""

    def __init__(self, head: bytes, source: Readable) -> None:
        self._head = head
        self._source = source

    def read(self, n: int = -1, /) -> bytes:
        if self._head:
            if n < 0 or n >= len(self._head):
                out, self._head = self._head, b""
                return out
            out, self._head = self._head[:n], self._head[n:]
            return out
        return self._source.read(n)


class _GzipReader:
    """Streaming gzip (multi-member) decompression; truncation is an error.

    Input goes to the inflater in slices of at most `_IN` bytes: handing it
    a whole 1 MiB read with an output limit makes it copy the unconsumed
    rest of the input on every call, which cost more than inflating."""

    def __init__(self, source: Readable) -> None:
        self._source = source
        self._d = _new_inflater()
        self._pending = memoryview(b"")  # read from the source, not yet inflated
        self._tail = b""  # input the inflater handed back; goes before _pending
        self._in_member = False

    def _piece(self) -> bytes | memoryview:
        if self._tail:
            piece: bytes | memoryview = self._tail
            self._tail = b""
            return piece
        if not self._pending:
            self._pending = memoryview(self._source.read(CHUNK))
        piece, self._pending = self._pending[:_IN], self._pending[_IN:]
        return piece

    def read(self, n: int = -1, /) -> bytes:
        limit = min(n, OUT_CHUNK) if n > 0 else OUT_CHUNK
        while True:
            data = self._piece()
            if not data:
                if self._in_member:
                    raise BadContent("layer is truncated: gzip stream ends early")
                return b""
            if not self._in_member:
                if not bytes(data).strip(b"\0"):
                    continue  # zero padding after the last member
                self._d = _new_inflater()
                self._in_member = True
            try:
                out = self._d.decompress(data, limit)
            except _inflate_errors as exc:
                raise BadContent(f"layer is not valid gzip: {exc}") from exc
            self._tail = self._d.unconsumed_tail
            if self._d.eof:
                self._in_member = False
                self._tail = self._d.unused_data
            if out:
                return out


class _ZstdReader:
    def __init__(self, source: Readable) -> None:
        self._r = zstandard.ZstdDecompressor().stream_reader(
            source,  # type: ignore[arg-type]  # any object with read() will do
            read_size=CHUNK,
            read_across_frames=True,
        )

    def read(self, n: int = -1, /) -> bytes:
        try:
            out: bytes = self._r.read(min(n, OUT_CHUNK) if n > 0 else OUT_CHUNK)
        except zstandard.ZstdError as exc:
            raise BadContent(f"layer is not valid zstd: {exc}") from exc
        return out


def decompressed(source: Readable) -> Readable:
    """A reader of the uncompressed tar inside `source` (gzip/zstd/plain)."""
    head = b""
    while len(head) < 4:
        more = source.read(4 - len(head))
        if not more:
            break
        head += more
    prefixed = _Prefixed(head, source)
    if head.startswith(_GZIP_MAGIC):
        return _GzipReader(prefixed)
    if head.startswith(_ZSTD_MAGIC):
        return _ZstdReader(prefixed)
    return prefixed
