"""Memory exhaustion from an image (issue 17): GNU long-name and PAX bodies
are not read whole at the size a header claims, decompressed bytes and
inodes are capped, and a manifest without layer sizes is refused."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import zlib
from pathlib import Path

import pytest

from runtime.image.errors import BadContent
from runtime.image.pull import parse_manifest
from runtime.image.unpack import Limits, unpack_layer

BOMB = 128 << 20  # what the header claims


def gzip_stream(parts: list[bytes], zeros_after: int = 0) -> bytes:
    """gzip of `parts`, then `zeros_after` zero bytes (streamed, never held)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [c.compress(p) for p in parts]
    block = bytes(1 << 20)
    for _ in range(zeros_after >> 20):
        out.append(c.compress(block))
    out.append(c.flush())
    return b"".join(out)


def header(name: str, size: int, kind: bytes) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    info.type = kind
    return info.tobuf(tarfile.USTAR_FORMAT)


def pax_bomb(kind: bytes = tarfile.XHDTYPE) -> bytes:
    return gzip_stream([header("././@PaxHeader", BOMB, kind)], zeros_after=BOMB)


def test_pax_bomb_refused_without_growing_memory(tmp_path: Path) -> None:
    layer = pax_bomb()
    assert len(layer) < 300 << 10  # a small layer
    blob = tmp_path / "bomb.gz"
    blob.write_bytes(layer)
    code = f"""
import resource, sys
from pathlib import Path
from runtime.image.unpack import unpack_layer
from runtime.image.errors import BadContent
dest = Path({str(tmp_path / "fs")!r}); dest.mkdir()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    with open({str(blob)!r}, "rb") as f:
        unpack_layer(f, dest, readahead=False)
except BadContent as exc:
    print("refused:", exc, file=sys.stderr)
else:
    sys.exit("the bomb was accepted")
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert "header body" in res.stderr
    assert int(res.stdout) < 64, f"RSS grew by {res.stdout.strip()} MiB"


@pytest.mark.parametrize("kind", [tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK])
def test_gnu_long_name_bomb_refused(tmp_path: Path, kind: bytes) -> None:
    layer = gzip_stream([header("././@LongLink", BOMB, kind)], zeros_after=2 << 20)
    with pytest.raises(BadContent, match="header body"):
        unpack_layer(io.BytesIO(layer), tmp_path, readahead=False)


def test_many_small_pax_headers_capped_in_total(tmp_path: Path) -> None:
    rest = b" comment=" + b"x" * 900 + b"\n"
    body = b"%d" % (len(rest) + 3) + rest  # (the length counts its own 3 digits)
    one = header("p", len(body), tarfile.XHDTYPE) + body + bytes(-len(body) % 512)
    layer = gzip_stream([one * 20_000])  # 20k headers of ~1 KiB before one entry
    with pytest.raises(BadContent, match="in all"):
        unpack_layer(io.BytesIO(layer), tmp_path, readahead=False)


def tar_of(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_decompressed_bytes_and_inodes_capped(tmp_path: Path) -> None:
    for d in "abc":
        (tmp_path / d).mkdir()
    layer = gzip_stream([tar_of({"zeros": bytes(4 << 20)})])
    with pytest.raises(BadContent, match="decompresses to more than"):
        unpack_layer(io.BytesIO(layer), tmp_path / "a", limits=Limits(bytes=1 << 20))
    # the default cap: 10x the compressed size, at least 64 MiB
    assert Limits.for_blob(len(layer), 10).bytes == 64 << 20
    assert Limits.for_blob(100 << 20, 10).bytes == 1000 << 20
    many = gzip_stream([tar_of({f"f{i}": b"" for i in range(50)})])
    with pytest.raises(BadContent, match="more than 20 entries"):
        unpack_layer(io.BytesIO(many), tmp_path / "b", limits=Limits(inodes=20))
    stats, _ = unpack_layer(io.BytesIO(many), tmp_path / "c", limits=Limits(inodes=50))
    assert stats.inodes == 50


def test_manifest_without_layer_sizes_refused() -> None:
    config = json.dumps({"rootfs": {"diff_ids": ["sha256:" + "1" * 64]}}).encode()
    layer = {"digest": "sha256:" + "2" * 64, "mediaType": "application/vnd.oci.image.layer.v1.tar"}
    for bad in ({}, {"size": -1}, {"size": "12"}, {"size": True}):
        manifest = json.dumps({"layers": [{**layer, **bad}]}).encode()
        with pytest.raises(BadContent, match="no valid size"):
            parse_manifest(manifest, "", config, "sha256:c")
    ok = json.dumps({"layers": [{**layer, "size": 12}]}).encode()
    assert parse_manifest(ok, "", config, "sha256:c").layers[0].size == 12
