"""Layer extraction as root: metadata preserved, whiteouts in overlay form,
and nothing ever written outside the layer directory."""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard

from runtime.image.errors import BadContent, UnsafeEntry
from runtime.image.unpack import OPAQUE_XATTR, decompressed, extract

pytestmark = pytest.mark.root

Add = Callable[[tarfile.TarFile], None]


def make_tar(*adds: Add) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for add in adds:
            add(tf)
    return buf.getvalue()


def entry(
    name: str,
    kind: bytes = tarfile.REGTYPE,
    data: bytes = b"",
    mode: int = 0o644,
    uid: int = 0,
    gid: int = 0,
    link: str = "",
    pax: dict[str, str] | None = None,
    dev: tuple[int, int] = (0, 0),
) -> Add:
    def add(tf: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type, info.mode, info.uid, info.gid = kind, mode, uid, gid
        info.linkname, info.mtime = link, 1_600_000_000
        info.devmajor, info.devminor = dev
        if pax:
            info.pax_headers = pax
        if kind == tarfile.REGTYPE:
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        else:
            tf.addfile(info)

    return add


def unpack(tmp_path: Path, data: bytes) -> Path:
    dest = tmp_path / "layer"
    dest.mkdir()
    extract(decompressed(io.BytesIO(data)), dest)
    return dest


def test_metadata_is_preserved(tmp_path: Path) -> None:
    data = make_tar(
        entry("./", tarfile.DIRTYPE, mode=0o755),
        entry("./etc/", tarfile.DIRTYPE, mode=0o750, uid=0, gid=42),
        entry("./etc/passwd", data=b"root:x:0:0\n", mode=0o640, uid=1000, gid=1001),
        entry("bin/", tarfile.DIRTYPE, mode=0o555),
        entry("bin/suid", data=b"#!", mode=0o4755, uid=0, gid=0),
        entry("bin/link", tarfile.LNKTYPE, link="bin/suid"),
        entry("bin/sym", tarfile.SYMTYPE, link="/bin/suid"),
        entry("bin/up", tarfile.SYMTYPE, link="../../../../etc/shadow"),
        entry("dev/", tarfile.DIRTYPE),
        entry("dev/null", tarfile.CHRTYPE, mode=0o666, dev=(1, 3)),
        entry("dev/fifo", tarfile.FIFOTYPE, mode=0o600),
        entry("cap", data=b"x", pax={"SCHILY.xattr.user.note": "hello"}),
        entry("sneaky/", tarfile.DIRTYPE, pax={"SCHILY.xattr.trusted.overlay.redirect": "/etc"}),
        entry("implicit/deep/file", data=b"y"),
    )
    dest = unpack(tmp_path, data)
    st = os.stat(dest / "etc/passwd")
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (1000, 1001, 0o640)
    assert (dest / "etc/passwd").read_bytes() == b"root:x:0:0\n"
    assert int(st.st_mtime) == 1_600_000_000
    st = os.stat(dest / "etc")
    assert (st.st_gid, stat.S_IMODE(st.st_mode), int(st.st_mtime)) == (42, 0o750, 1_600_000_000)
    assert stat.S_IMODE(os.stat(dest / "bin/suid").st_mode) == 0o4755
    assert stat.S_IMODE(os.stat(dest / "bin").st_mode) == 0o555
    assert os.stat(dest / "bin/link").st_ino == os.stat(dest / "bin/suid").st_ino
    assert os.readlink(dest / "bin/sym") == "/bin/suid"
    assert os.readlink(dest / "bin/up") == "../../../../etc/shadow"
    st = os.lstat(dest / "dev/null")
    assert stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == 1 and os.minor(st.st_rdev) == 3
    assert stat.S_ISFIFO(os.lstat(dest / "dev/fifo").st_mode)
    assert os.getxattr(dest / "cap", "user.note") == b"hello"
    assert "trusted.overlay.redirect" not in os.listxattr(dest / "sneaky")
    assert (dest / "implicit/deep/file").read_bytes() == b"y"


def test_whiteouts_become_overlay_whiteouts(tmp_path: Path) -> None:
    data = make_tar(
        entry("etc/", tarfile.DIRTYPE),
        entry("etc/.wh.gone"),
        entry("opaque/", tarfile.DIRTYPE),
        entry("opaque/.wh..wh..opq"),
        entry("opaque/new", data=b"n"),
        entry("other/.wh.x"),
    )
    dest = unpack(tmp_path, data)
    st = os.lstat(dest / "etc/gone")
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(0, 0)
    assert not (dest / "etc/.wh.gone").exists()
    assert os.getxattr(dest / "opaque", OPAQUE_XATTR) == b"y"
    assert sorted(os.listdir(dest / "opaque")) == ["new"]
    assert stat.S_ISCHR(os.lstat(dest / "other/x").st_mode)


def test_later_entries_replace_earlier(tmp_path: Path) -> None:
    data = make_tar(
        entry("a", data=b"1"),
        entry("a", data=b"2"),
        entry("d/", tarfile.DIRTYPE),
        entry("d/f", data=b"x"),
        entry("d", tarfile.SYMTYPE, link="/tmp"),
    )
    dest = unpack(tmp_path, data)
    assert (dest / "a").read_bytes() == b"2"
    assert os.readlink(dest / "d") == "/tmp"


@pytest.mark.parametrize(
    "adds",
    [
        [entry("/etc/passwd", data=b"x")],
        [entry("../escape", data=b"x")],
        [entry("a/../../escape", data=b"x")],
        [entry("link", tarfile.SYMTYPE, link=".."), entry("link/escape", data=b"x")],
        [entry("link", tarfile.SYMTYPE, link="/"), entry("link/tmp/escape", data=b"x")],
        [entry("hl", tarfile.LNKTYPE, link="../outside")],
        [entry("hl", tarfile.LNKTYPE, link="/etc/hostname")],
        [entry("s", tarfile.SYMTYPE, link="/etc"), entry("hl", tarfile.LNKTYPE, link="s/hostname")],
        [entry("hl", tarfile.LNKTYPE, link="missing")],
        [entry("d/.wh...", data=b"")],
    ],
)
def test_escapes_are_refused(tmp_path: Path, adds: list[Add]) -> None:
    outside = tmp_path / "outside"
    outside.write_text("keep")
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(UnsafeEntry):
        unpack(tmp_path, make_tar(*adds))
    assert outside.read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "layer"])
    assert not (tmp_path / "escape").exists()


@pytest.mark.parametrize("compress", ["gzip", "zstd", "none", "gzip-multi"])
def test_compressions(tmp_path: Path, compress: str) -> None:
    raw = make_tar(entry("f", data=b"z" * 100_000))
    if compress == "gzip":
        data = gzip.compress(raw)
    elif compress == "gzip-multi":
        data = gzip.compress(raw[:5000]) + gzip.compress(raw[5000:])
    elif compress == "zstd":
        data = zstandard.ZstdCompressor().compress(raw)
    else:
        data = raw
    assert (unpack(tmp_path, data) / "f").read_bytes() == b"z" * 100_000


def test_truncated_and_garbage(tmp_path: Path) -> None:
    raw = make_tar(entry("f", data=os.urandom(200_000)))
    with pytest.raises(BadContent):
        unpack(tmp_path, gzip.compress(raw)[:-5000])
    dest = tmp_path / "g"
    dest.mkdir()
    with pytest.raises(BadContent):
        extract(decompressed(io.BytesIO(b"\x1f\x8bnot gzip at all")), dest)
