"""Unpack a tar archive of plain data (sources, manifests) into a directory,
as tarfile's "data" filter does (Python 3.11.4 and later): where the running
Python has no filters (Debian bookworm's 3.11.2), members are checked here
the same way before anything is written."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path


def _inside(into: Path, name: str) -> bool:
    target = os.path.realpath(into / name)
    return os.path.commonpath([os.path.realpath(into), target]) == os.path.realpath(into)


def _checked(tar: tarfile.TarFile, into: Path) -> list[tarfile.TarInfo]:
    """Every member, or TarError naming the first one the "data" filter refuses."""
    members = tar.getmembers()
    for m in members:
        m.name = m.name.lstrip("/")  # an absolute name lands inside, as the filter has it
        if not _inside(into, m.name):
            raise tarfile.TarError(f"{m.name!r}: outside the destination")
        if m.issym() and not _inside(into, os.path.join(os.path.dirname(m.name), m.linkname)):
            raise tarfile.TarError(f"{m.name!r}: links outside the destination")
        if m.islnk() and not _inside(into, m.linkname):
            raise tarfile.TarError(f"{m.name!r}: links outside the destination")
        if not (m.isfile() or m.isdir() or m.issym() or m.islnk()):
            raise tarfile.TarError(f"{m.name!r}: a special file")
        m.mode &= 0o755  # no set-id bits, no group or other write
        m.uid = m.gid = 0
        m.uname = m.gname = ""
    return members


def extract_data(tar: tarfile.TarFile, into: Path) -> None:
    """Every member of `tar` written under `into` (made if missing)."""
    into.mkdir(parents=True, exist_ok=True)
    if hasattr(tarfile, "data_filter"):
        tar.extractall(into, filter="data")
    else:
        tar.extractall(into, members=_checked(tar, into))
