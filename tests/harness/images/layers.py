"""Deterministic layer tarballs: a `Tree` -> tar -> gzip/zstd/none -> a blob.

Every header is pinned (mtime EPOCH, uid/gid from the entry, empty user and
group names, PAX format) and entries come in `Tree.entries()` order, so the
same tree always gives the same `diff_id` (sha256 of the tar) and the same
blob digest (gzip with mtime 0 and no file name; zstd without threads).
The tar is streamed through the compressor into the blob store; nothing is
held in memory whole.
"""

from __future__ import annotations

import gzip
import shutil
import tarfile
from dataclasses import dataclass
from typing import BinaryIO, Literal, cast

import zstandard

from tests.harness.images.content import (
    DOCKER_LAYER,
    DOCKER_LAYER_GZIP,
    OCI_LAYER,
    OCI_LAYER_GZIP,
    OCI_LAYER_ZSTD,
    Blob,
    BlobStore,
    HashingWriter,
    Writable,
)
from tests.harness.images.tree import Entry, Kind, Tree

Compression = Literal["gzip", "zstd", "none"]
Format = Literal["oci", "docker"]

EPOCH = 1577836800  # 2020-01-01T00:00:00Z, every mtime and "created"
EPOCH_ISO = "2020-01-01T00:00:00Z"

_MEDIA_TYPES: dict[tuple[Format, Compression], str] = {
    ("oci", "gzip"): OCI_LAYER_GZIP,
    ("oci", "zstd"): OCI_LAYER_ZSTD,
    ("oci", "none"): OCI_LAYER,
    ("docker", "gzip"): DOCKER_LAYER_GZIP,
    ("docker", "none"): DOCKER_LAYER,
}


def layer_media_type(fmt: Format, compression: Compression) -> str:
    try:
        return _MEDIA_TYPES[(fmt, compression)]
    except KeyError:
        raise ValueError(f"no {fmt} media type for {compression} layers") from None


@dataclass(frozen=True)
class Layer:
    """A stored layer blob; its media type depends on the manifest format."""

    digest: str
    size: int
    diff_id: str
    compression: Compression
    blob: Blob

    def for_format(self, fmt: Format) -> Blob:
        return Blob(layer_media_type(fmt, self.compression), self.digest, self.size, self.blob.path)


def tar_info(entry: Entry) -> tarfile.TarInfo:
    info = tarfile.TarInfo(entry.path)
    info.mtime = EPOCH
    info.mode = entry.mode
    info.uid, info.gid = entry.uid, entry.gid
    info.uname = info.gname = ""
    if entry.kind is Kind.FILE:
        assert entry.content is not None
        info.type, info.size = tarfile.REGTYPE, entry.content.size
    elif entry.kind is Kind.DIR:
        info.type = tarfile.DIRTYPE
    elif entry.kind is Kind.SYMLINK:
        info.type, info.linkname = tarfile.SYMTYPE, entry.link
    else:
        info.type, info.linkname = tarfile.LNKTYPE, entry.link
    return info


def write_tar(tree: Tree, out: Writable) -> None:
    """Write `tree` as an uncompressed tar to the file object `out`."""
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:  # type: ignore[call-overload]
        for entry in tree.entries():
            info = tar_info(entry)
            if entry.kind is Kind.FILE:
                assert entry.content is not None
                with entry.content.open() as src:
                    tar.addfile(info, src)
            else:
                tar.addfile(info)


def build_layer(
    store: BlobStore, tree: Tree, compression: Compression = "gzip", gzip_level: int = 6
) -> Layer:
    """Write `tree` as a layer blob into `store` and describe it."""
    with store.temp_file() as (f, tmp):
        blob_hash = HashingWriter(f)
        if compression == "gzip":
            gz = gzip.GzipFile(
                filename="", mode="wb", fileobj=blob_hash, compresslevel=gzip_level, mtime=0
            )
            with gz:
                diff = HashingWriter(gz)
                write_tar(tree, diff)
        elif compression == "zstd":
            cctx = zstandard.ZstdCompressor(level=3)
            with cctx.stream_writer(cast(BinaryIO, blob_hash), closefd=False) as zw:
                diff = HashingWriter(zw)
                write_tar(tree, diff)
        elif compression == "none":
            diff = HashingWriter(blob_hash)
            write_tar(tree, diff)
        else:
            raise ValueError(f"unknown compression {compression!r}")
    blob = store.add_file(tmp, layer_media_type("oci", compression), blob_hash.digest)
    return Layer(blob.digest, blob.size, diff.digest, compression, blob)


def decompress(layer: Layer, out: BinaryIO) -> None:
    """Copy the uncompressed tar of `layer` to `out` (for tests and checks)."""
    with layer.blob.open() as f:
        if layer.compression == "gzip":
            with gzip.GzipFile(fileobj=f, mode="rb") as gz:
                shutil.copyfileobj(gz, out)
        elif layer.compression == "zstd":
            with zstandard.ZstdDecompressor().stream_reader(f) as zr:
                shutil.copyfileobj(zr, out)
        else:
            shutil.copyfileobj(f, out)
