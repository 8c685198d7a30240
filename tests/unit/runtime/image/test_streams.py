"""Streams of a pull: Readahead (reads in a thread) and gzip decompression
(multi-member, padding, truncation, both inflate backends)."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import threading
import zlib

import pytest

from runtime.image import decompress, unpack
from runtime.image.errors import BadContent
from runtime.image.readahead import Readahead


class _Chunks:
    """A Readable handing out `chunks` one per read, then an optional error."""

    def __init__(self, chunks: list[bytes], error: BaseException | None = None) -> None:
        self.chunks = list(chunks)
        self.error = error
        self.reads = 0
        self.threads: set[str] = set()

    def read(self, n: int = -1, /) -> bytes:
        self.reads += 1
        self.threads.add(threading.current_thread().name)
        if self.chunks:
            return self.chunks.pop(0)
        if self.error is not None:
            raise self.error
        return b""


def _read_all(r: Readahead, n: int) -> bytes:
    out = []
    while data := r.read(n):
        assert len(data) <= n
        out.append(data)
    return b"".join(out)


@pytest.mark.parametrize("n", [1, 7, 100, 1 << 20])
def test_readahead_reads_everything_in_order(n: int) -> None:
    chunks = [os.urandom(s) for s in (10, 300, 1, 4096, 77)]
    src = _Chunks(chunks)
    with Readahead(src, depth=2, name="ra-test") as r:
        assert _read_all(r, n) == b"".join(chunks)
        assert r.read(10) == b""  # EOF stays EOF
    assert src.threads == {"ra-test"}


def test_readahead_hands_over_the_producers_error_every_time() -> None:
    boom = BadContent("blob is larger than it says")
    src = _Chunks([b"abc", b"def"], error=boom)
    with Readahead(src) as r:
        assert r.read(-1) == b"abc"
        assert r.read(-1) == b"def"
        for _ in range(2):
            with pytest.raises(BadContent) as caught:
                r.read(-1)
            assert caught.value is boom


def test_readahead_close_stops_the_producer() -> None:
    src = _Chunks([b"x" * 10] * 1000)
    r = Readahead(src, depth=2)
    assert r.read(5) == b"xxxxx"
    r.close()
    reads = src.reads
    assert reads < 10  # bounded: depth + the one in flight, not the whole stream
    assert src.chunks  # never read to the end
    with pytest.raises(ValueError):
        r.read(1)
    r.close()  # idempotent
    assert src.reads == reads


def _gunzip_all(data: bytes, n: int = 1 << 20) -> bytes:
    r = unpack.decompressed(io.BytesIO(data))
    out = []
    while chunk := r.read(n):
        out.append(chunk)
    return b"".join(out)


@pytest.fixture(params=["default", "stdlib"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "stdlib":
        monkeypatch.setattr(decompress, "_new_inflater", decompress._stdlib_inflater)
    return str(request.param)


def test_gzip_multi_member_compressible_and_padding(backend: str) -> None:
    # Compressible data makes the inflater stop at its output limit and hand
    # input back; several members and zero padding follow one another.
    parts = [b"a" * (3 << 20), os.urandom(700_000), b"".join(b"%d\n" % i for i in range(200_000))]
    blob = b"".join(gzip.compress(p, 6) for p in parts) + b"\0" * 1000
    for n in (1 << 20, 4096):
        assert (
            hashlib.sha256(_gunzip_all(blob, n)).digest()
            == hashlib.sha256(b"".join(parts)).digest()
        )


def test_gzip_truncated_or_corrupt_is_bad_content(backend: str) -> None:
    blob = gzip.compress(os.urandom(1 << 20), 1)
    with pytest.raises(BadContent, match="truncated"):
        _gunzip_all(blob[: len(blob) // 2])
    with pytest.raises(BadContent, match="truncated"):
        _gunzip_all(blob[:-4])  # no trailer
    bad = bytearray(blob)
    bad[-8] ^= 0xFF  # CRC32 of the member
    with pytest.raises(BadContent, match="not valid gzip"):
        _gunzip_all(bytes(bad))


def test_zlib_ng_and_stdlib_agree() -> None:
    data = b"".join(b"line %d\n" % i for i in range(100_000))
    blob = gzip.compress(data)
    assert zlib.decompress(blob, 31) == data == _gunzip_all(blob)
