"""Layer unpacking: decompress a layer stream and extract its tar into a
fresh directory, in overlayfs form.

Decompression (runtime.image.decompress) is chosen by the stream's magic
bytes. Extraction runs in-process and trusts nothing in the archive:

- entry names that are absolute or contain a `..` component are refused;
- no path is ever resolved through a symlink: every parent directory of an
  entry is checked (lstat) to be a real directory inside the layer, and files
  are created with O_NOFOLLOW|O_EXCL after removing what was there;
- hard links must name an earlier entry of the same layer (same rules);
- symlink targets are stored verbatim (they resolve inside the container's
  root at run time, never here).

It preserves numeric ownership, modes (including setuid, applied after chown),
mtimes, xattrs (`SCHILY.xattr.*` PAX records), device nodes, FIFOs and hard
links. OCI whiteouts become overlayfs whiteouts: `.wh.NAME` a 0/0 character
device `NAME`, `.wh..wh..opq` the xattr `trusted.overlay.opaque=y` on its
directory. It must never write outside `dest`, and callers extract into a
private temporary directory that is renamed into place only when the layer's
digests have been verified.

It also bounds what a layer can take (`Limits`): header bodies (PAX records,
GNU long names) are read into memory only up to a cap per entry and per
layer (a small gzip layer can declare a 512 MiB PAX body), decompressed
bytes up to a multiple of the compressed size, and inodes up to a count.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.image.content import CHUNK, HashingReader, Readable
from runtime.image.decompress import INFLATE_BACKEND, OUT_CHUNK, decompressed
from runtime.image.errors import BadContent, UnsafeEntry
from runtime.image.readahead import Readahead

__all__ = ["INFLATE_BACKEND", "Extractor", "LayerStats", "Limits", "decompressed", "extract",
           "unpack_layer"]  # fmt: skip

WHITEOUT_PREFIX = ".wh."
OPAQUE_MARKER = ".wh..wh..opq"
OPAQUE_XATTR = "trusted.overlay.opaque"
_XATTR_PAX = "SCHILY.xattr."


@dataclass(frozen=True)
class Limits:
    """What one layer may take; exceeding any is a BadContent error."""

    header_bytes: int = 1 << 20  # one PAX or GNU long-name body (Go's archive/tar: 1 MiB)
    header_total: int = 16 << 20  # all of them in a layer
    bytes: int = 1 << 62  # decompressed tar bytes
    inodes: int = 2_000_000

    @staticmethod
    def for_blob(size: int, expansion: int, inodes: int = 2_000_000) -> Limits:
        """The default: `expansion` times the compressed `size`, never less
        than 64 MiB (tar headers and padding of a tiny layer compress far
        better than any ratio)."""
        return Limits(bytes=max(size * expansion, 64 << 20), inodes=inodes)


class _Capped:
    """A reader that fails past `limit` bytes."""

    def __init__(self, source: Readable, limit: int) -> None:
        self._source = source
        self._left = limit
        self._limit = limit

    def read(self, n: int = -1, /) -> bytes:
        data = self._source.read(n)
        self._left -= len(data)
        if self._left < 0:
            raise BadContent(
                f"layer decompresses to more than {self._limit} bytes "
                "(raise --max-layer-expansion if the image is genuine)"
            )
        return data


@dataclass
class LayerStats:
    """What a layer occupies: apparent bytes of its files and its inode count."""

    bytes: int = 0
    inodes: int = 0


# -- tar reading -------------------------------------------------------------

_BLOCK = tarfile.BLOCKSIZE
_PAX_TYPES = (tarfile.XHDTYPE, tarfile.SOLARIS_XHDTYPE)


class TarReader:
    """A forward-only tar reader over a stream: ustar, PAX (per-file and
    global) and GNU long names. Unlike `tarfile`'s stream mode it hands file
    data to the caller chunk by chunk without joining buffers, which keeps
    unpacking close to the speed of the disk. Headers are parsed (and their
    checksums checked) by `tarfile.TarInfo.frombuf`."""

    def __init__(self, source: Readable, limits: Limits | None = None) -> None:
        self._src = source
        self._buf = memoryview(b"")
        self._pending = 0  # data + padding of the current member not yet consumed
        self._global: dict[str, str] = {}
        self._limits = limits or Limits()
        self._header_total = 0

    def _header_body(self, info: tarfile.TarInfo) -> bytes:
        """A PAX or GNU long-name body, read only within the limits."""
        size = info.size
        if size > self._limits.header_bytes:
            raise BadContent(f"tar header body of {size} bytes exceeds {self._limits.header_bytes}")
        self._header_total += size
        if self._header_total > self._limits.header_total:
            raise BadContent(f"tar header bodies exceed {self._limits.header_total} bytes in all")
        return self._read(self._padded(size))[:size]

    def _fill(self) -> None:
        chunk = self._src.read(CHUNK)
        if not chunk:
            raise BadContent("layer is truncated: tar stream ends early")
        self._buf = memoryview(chunk)

    def _read(self, n: int) -> bytes:
        parts = []
        while n > 0:
            if not self._buf:
                self._fill()
            take = self._buf[:n]
            parts.append(bytes(take))
            self._buf = self._buf[len(take) :]
            n -= len(take)
        return b"".join(parts)

    def _skip(self, n: int) -> None:
        while n > 0:
            if not self._buf:
                self._fill()
            take = min(n, len(self._buf))
            self._buf = self._buf[take:]
            n -= take

    @staticmethod
    def _padded(size: int) -> int:
        return -(-size // _BLOCK) * _BLOCK

    def copy_data(self, fd: int, m: tarfile.TarInfo) -> None:
        """Write the current member's data to `fd`."""
        n = m.size
        while n > 0:
            if not self._buf:
                self._fill()
            take = self._buf[:n]
            view = take
            while view:
                view = view[os.write(fd, view) :]
            self._buf = self._buf[len(take) :]
            n -= len(take)
        self._pending -= m.size

    def next(self) -> tarfile.TarInfo | None:
        self._skip(self._pending)
        self._pending = 0
        pax: dict[str, str] = {}
        long_name: str | None = None
        long_link: str | None = None
        while True:
            if not self._buf:
                chunk = self._src.read(CHUNK)
                if not chunk:
                    return None  # EOF without end-of-archive blocks: tolerated, as tar does
                self._buf = memoryview(chunk)
            header = self._read(_BLOCK)
            if header == bytes(_BLOCK):
                return None
            info = tarfile.TarInfo.frombuf(header, "utf-8", "surrogateescape")
            if info.type in _PAX_TYPES or info.type == tarfile.XGLTYPE:
                records = _parse_pax(self._header_body(info))
                if info.type == tarfile.XGLTYPE:
                    self._global.update(records)
                else:
                    pax.update(records)
                continue
            if info.type in (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK):
                data = self._header_body(info)
                text = data.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
                if info.type == tarfile.GNUTYPE_LONGNAME:
                    long_name = text
                else:
                    long_link = text
                continue
            if info.type == tarfile.GNUTYPE_SPARSE:
                raise BadContent(f"tar entry {info.name!r}: GNU sparse files are not supported")
            break
        headers = {**self._global, **pax}
        if long_name is not None:
            info.name = long_name
        if long_link is not None:
            info.linkname = long_link
        if headers:
            _apply_pax(info, headers)
        if info.type not in tarfile.REGULAR_TYPES:
            info.size = 0 if info.type != tarfile.CONTTYPE else info.size
        self._pending = self._padded(info.size)
        return info


def _parse_pax(data: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        length = int(data[pos:space])
        if length <= 0 or pos + length > len(data):
            raise BadContent("layer tar has a malformed PAX header")
        record = data[space + 1 : pos + length - 1]
        key, _, value = record.partition(b"=")
        out[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
        pos += length
    return out


def _apply_pax(info: tarfile.TarInfo, headers: dict[str, str]) -> None:
    info.pax_headers = headers
    if "path" in headers:
        info.name = headers["path"]
    if "linkpath" in headers:
        info.linkname = headers["linkpath"]
    for key in ("size", "uid", "gid"):
        if key in headers:
            value = int(headers[key])
            if value < 0:
                raise BadContent(f"tar entry {info.name!r}: negative PAX {key}")
            setattr(info, key, value)
    if "mtime" in headers:
        mtime = float(headers["mtime"])
        if not -(2**33) < mtime < 2**33:  # also NaN and infinities
            raise BadContent(f"tar entry {info.name[:200]!r}: PAX mtime {mtime} is out of range")
        info.mtime = mtime
    if info.type == tarfile.AREGTYPE and info.name.endswith("/"):
        info.type = tarfile.DIRTYPE


# -- extraction --------------------------------------------------------------

_ENTRY_ERRNOS = {
    errno.ENOENT, errno.EEXIST, errno.EISDIR, errno.ENOTDIR, errno.EACCES, errno.EPERM,
    errno.ENAMETOOLONG, errno.EINVAL, errno.ELOOP, errno.ENOTEMPTY, errno.EMLINK,
    errno.EOPNOTSUPP, errno.ERANGE, errno.E2BIG, errno.EXDEV,
}  # fmt: skip


def _clean(name: str, what: str = "entry") -> str:
    """A tar name as a relative path with no `.`/empty parts; refuses escapes."""
    if "\0" in name:
        raise UnsafeEntry(f"tar {what} {name!r} contains a NUL byte")
    if name.startswith("/"):
        raise UnsafeEntry(f"tar {what} {name!r} is an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeEntry(f"tar {what} {name!r} contains '..'")
    return "/".join(parts)


@dataclass
class _DirMeta:
    rel: str
    uid: int
    gid: int
    mode: int
    mtime: float


class Extractor:
    """Extracts one tar stream into `dest` (an empty private directory)."""

    def __init__(
        self, dest: Path, *, preserve_owner: bool | None = None, limits: Limits | None = None
    ) -> None:
        self.limits = limits or Limits()
        self.entries = 0
        self.dest = dest
        self.root = str(dest)
        self.preserve_owner = os.geteuid() == 0 if preserve_owner is None else preserve_owner
        self.stats = LayerStats()
        self._dirs: set[str] = {""}
        # Every path this extractor created (some may be gone since). `dest`
        # starts empty, so a path not in here does not exist and needs no
        # lstat before it is created; O_EXCL, mkdir, symlink and mknod refuse
        # to replace anything all the same.
        self._made: set[str] = {""}
        self._dir_meta: dict[str, _DirMeta] = {}

    def _abs(self, rel: str) -> str:
        return f"{self.root}/{rel}" if rel else self.root

    def _ensure_parent(self, rel: str, *, create: bool = True) -> None:
        """Make sure every component of directory `rel` is a real directory."""
        if rel in self._dirs:
            return
        cur = ""
        for part in rel.split("/"):
            cur = f"{cur}/{part}" if cur else part
            if cur in self._dirs:
                continue
            path = self._abs(cur)
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                if not create:
                    raise UnsafeEntry(f"tar entry refers to missing directory {cur!r}") from None
                os.mkdir(path, 0o755)
                self.stats.inodes += 1
                self._dirs.add(cur)
                self._made.add(cur)
                continue
            if not stat.S_ISDIR(st.st_mode):
                raise UnsafeEntry(
                    f"tar entry path goes through {cur!r}, which is not a directory "
                    "(a symlink or file): refusing to follow it"
                )
            self._dirs.add(cur)

    def _clear(self, rel: str, *, keep_dir: bool) -> bool:
        """Remove whatever is at `rel`; returns True if a directory was kept."""
        if rel not in self._made:
            return False
        path = self._abs(rel)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return False
        if stat.S_ISDIR(st.st_mode):
            if keep_dir:
                return True
            shutil.rmtree(path)
            prefix = rel + "/"
            self._dirs = {d for d in self._dirs if d != rel and not d.startswith(prefix)}
            self._dir_meta = {
                d: m for d, m in self._dir_meta.items() if d != rel and not d.startswith(prefix)
            }
        else:
            os.unlink(path)
        return False

    def extract(self, stream: Readable) -> LayerStats:
        reader = TarReader(stream, self.limits)
        try:
            while (member := reader.next()) is not None:
                self.entries += 1
                if self.entries > self.limits.inodes:
                    raise BadContent(f"layer has more than {self.limits.inodes} entries")
                try:
                    self._entry(reader, member)
                except OSError as exc:
                    # what the entry asks for cannot be made (an empty symlink
                    # target, a name too long or clashing with an earlier
                    # entry, an xattr the filesystem refuses); the host's own
                    # failures (no space, I/O errors) stay what they are
                    if exc.errno not in _ENTRY_ERRNOS:
                        raise
                    raise BadContent(f"tar entry {member.name[:200]!r}: {exc.strerror}") from exc
        except (tarfile.TarError, UnicodeError, ValueError) as exc:
            raise BadContent(f"layer tar is corrupt: {exc}") from exc
        self._finish_dirs()
        return self.stats

    def _entry(self, tf: TarReader, m: tarfile.TarInfo) -> None:
        rel = _clean(m.name)
        if rel == "":
            if m.isdir():
                self._dir_meta[""] = _DirMeta("", m.uid, m.gid, m.mode & 0o7777, m.mtime)
            return
        parent, _, base = rel.rpartition("/")
        self._ensure_parent(parent)
        if base.startswith(WHITEOUT_PREFIX):
            self._whiteout(parent, base)
            return
        path = self._abs(rel)
        if m.isdir():
            if not self._clear(rel, keep_dir=True):
                os.mkdir(path, 0o700)
                self._made.add(rel)
                self.stats.inodes += 1
            self._dirs.add(rel)
            self._dir_meta[rel] = _DirMeta(rel, m.uid, m.gid, m.mode & 0o7777, m.mtime)
            self._xattrs(path, m)
            return
        self._clear(rel, keep_dir=False)
        self._made.add(rel)  # from here on something may exist at `rel`
        if m.isreg():
            self._file(tf, m, path)
        elif m.issym():
            os.symlink(m.linkname, path)
            self._own(path, m)
            self._xattrs(path, m)
            self._utime(path, m)
        elif m.islnk():
            target = _clean(m.linkname, "hard link target")
            tparent = target.rpartition("/")[0]
            self._ensure_parent(tparent, create=False)
            tpath = self._abs(target)
            try:
                tst = os.lstat(tpath)
            except FileNotFoundError:
                raise UnsafeEntry(
                    f"tar hard link {m.name!r} -> {m.linkname!r}: target is not in this layer"
                ) from None
            if stat.S_ISDIR(tst.st_mode):
                raise UnsafeEntry(f"tar hard link {m.name!r} points to a directory")
            os.link(tpath, path, follow_symlinks=False)
            self.stats.inodes += 0
        elif m.ischr() or m.isblk():
            kind = stat.S_IFCHR if m.ischr() else stat.S_IFBLK
            os.mknod(path, kind | (m.mode & 0o7777), os.makedev(m.devmajor, m.devminor))
            self._meta(path, m)
        elif m.isfifo():
            os.mkfifo(path, m.mode & 0o7777)
            self._meta(path, m)
        else:
            raise BadContent(f"tar entry {m.name!r} has unsupported type {m.type!r}")

    def _file(self, tf: TarReader, m: tarfile.TarInfo, path: str) -> None:
        fd = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
        try:
            tf.copy_data(fd, m)
            if self.preserve_owner:
                os.fchown(fd, m.uid, m.gid)
            os.fchmod(fd, m.mode & 0o7777)
            self._xattrs(fd, m)
            self._utime(fd, m)
        finally:
            os.close(fd)
        self.stats.bytes += m.size
        self.stats.inodes += 1

    def _whiteout(self, parent: str, base: str) -> None:
        pdir = self._abs(parent)
        if base == OPAQUE_MARKER:
            os.setxattr(pdir, OPAQUE_XATTR, b"y", follow_symlinks=False)
            return
        name = base[len(WHITEOUT_PREFIX) :]
        if name in ("", ".", "..") or "/" in name:
            raise UnsafeEntry(f"tar whiteout {base!r} in {parent or '/'!r} is malformed")
        rel = f"{parent}/{name}" if parent else name
        self._clear(rel, keep_dir=False)
        self._made.add(rel)
        os.mknod(self._abs(rel), stat.S_IFCHR | 0o000, os.makedev(0, 0))
        self.stats.inodes += 1

    def _own(self, path: str, m: tarfile.TarInfo) -> None:
        if self.preserve_owner:
            os.lchown(path, m.uid, m.gid)

    def _meta(self, path: str, m: tarfile.TarInfo) -> None:
        self._own(path, m)
        os.chmod(path, m.mode & 0o7777)
        self._xattrs(path, m)
        self._utime(path, m)
        self.stats.inodes += 1

    def _utime(self, target: str | int, m: tarfile.TarInfo) -> None:
        ns = int(m.mtime * 1e9)
        try:
            if isinstance(target, int):
                os.utime(target, ns=(ns, ns))
            else:
                os.utime(target, ns=(ns, ns), follow_symlinks=False)
        except OSError:
            pass

    def _xattrs(self, target: str | int, m: tarfile.TarInfo) -> None:
        headers: Mapping[str, Any] = m.pax_headers
        if not headers:
            return
        for key, value in headers.items():
            if not key.startswith(_XATTR_PAX):
                continue
            name = key[len(_XATTR_PAX) :]
            if name.startswith("trusted.overlay."):
                # overlayfs' own metadata (redirect, metacopy, opaque) is ours
                # to write from whiteouts; an image must not smuggle it in.
                continue
            raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
            try:
                if isinstance(target, int):
                    os.setxattr(target, name, raw)
                else:
                    os.setxattr(target, name, raw, follow_symlinks=False)
            except OSError as exc:
                # user.* is not allowed on symlinks; filesystems may lack
                # some namespaces. Losing such an xattr is what tar does too.
                if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                    raise

    def _finish_dirs(self) -> None:
        """Apply directory owners, modes and mtimes, deepest first (so a
        read-only directory does not block its children and mtimes stick)."""
        for rel in sorted(self._dir_meta, key=lambda r: r.count("/") + (r != ""), reverse=True):
            meta = self._dir_meta[rel]
            path = self._abs(rel)
            if self.preserve_owner:
                os.lchown(path, meta.uid, meta.gid)
            os.chmod(path, meta.mode)
            ns = int(meta.mtime * 1e9)
            os.utime(path, ns=(ns, ns), follow_symlinks=False)


def extract(stream: Readable, dest: Path) -> LayerStats:
    """Extract the (uncompressed) tar `stream` into the empty directory `dest`."""
    return Extractor(dest).extract(stream)


def unpack_layer(
    source: Readable, dest: Path, *, readahead: bool = True, limits: Limits | None = None
) -> tuple[LayerStats, str]:
    """Decompress the layer blob `source` and extract it into the empty
    directory `dest`; returns what it occupies and the sha256 of its tar (to
    check against the diff ID). With `readahead`, inflate and the tar's
    digest run in a thread of their own, ahead of extraction and its file
    writes. `source` is read to the end of the compressed stream, not beyond."""
    limits = limits or Limits()
    plain = HashingReader(_Capped(decompressed(source), limits.bytes))
    with contextlib.ExitStack() as stack:
        tar: Readable = plain
        if readahead:
            tar = stack.enter_context(
                Readahead(plain, chunk=OUT_CHUNK, depth=8, name="layer-inflate")
            )
        stats = Extractor(dest, limits=limits).extract(tar)
        while tar.read(CHUNK):  # what follows the end-of-archive blocks is in the digest too
            pass
    return stats, plain.digest
