"""A filesystem tree described in memory, to become one image layer.

`Tree` collects entries (directories, files, symlinks, hard links, whiteouts)
and `Tree.entries()` returns them ready to write as a tar: sorted parents
first, missing parent directories added, hard-link groups resolved so the
first member in tar order carries the data and the others link to it (a tar
hard link must follow its target). Paths are relative and normalised; a path
that is absolute after normalising or climbs with `..` is refused, so no
layer built here can name anything outside its root. This module does no I/O
except opening file contents when the tar is written.
"""

from __future__ import annotations

import enum
import io
import posixpath
import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

WHITEOUT_PREFIX = ".wh."
_CHUNK = 1 << 20
OPAQUE_WHITEOUT = ".wh..wh..opq"


class Kind(enum.Enum):
    FILE = "file"
    DIR = "dir"
    SYMLINK = "symlink"
    HARDLINK = "hardlink"


@dataclass(frozen=True)
class Content:
    """File contents: a size and a way to open them as a binary stream."""

    size: int
    open: Callable[[], BinaryIO]

    @classmethod
    def of(cls, data: bytes | str | Path | Content) -> Content:
        if isinstance(data, Content):
            return data
        if isinstance(data, str):
            data = data.encode()
        if isinstance(data, bytes):
            raw = data
            return cls(len(raw), lambda: io.BytesIO(raw))
        path = data
        return cls(path.stat().st_size, lambda: open(path, "rb"))

    @classmethod
    def random(cls, size: int, seed: int) -> Content:
        """`size` bytes of incompressible pseudo-random data, the same for the
        same seed, generated in chunks (never all in memory)."""
        return cls(size, lambda: io.BufferedReader(_RandomStream(size, seed), _CHUNK))


class _RandomStream(io.RawIOBase):
    def __init__(self, size: int, seed: int) -> None:
        self._left = size
        self._rng = random.Random(seed)

    def readable(self) -> bool:
        return True

    def readinto(self, buf: memoryview) -> int:  # type: ignore[override]
        n = min(len(buf), self._left)
        if n:
            buf[:n] = self._rng.randbytes(n)
            self._left -= n
        return n


@dataclass(frozen=True)
class Entry:
    path: str
    kind: Kind
    mode: int = 0o755
    uid: int = 0
    gid: int = 0
    content: Content | None = None  # FILE
    link: str = ""  # SYMLINK target (any string), HARDLINK target (a path in the tree)


def normalize(path: str) -> str:
    """`/usr//bin/./sh` -> `usr/bin/sh`; refuses `..`, the root itself and NULs."""
    if "\0" in path:
        raise ValueError(f"NUL in path {path!r}")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts:
        raise ValueError(f"path {path!r} names the root")
    if ".." in parts:
        raise ValueError(f"path {path!r} climbs with '..'")
    return "/".join(parts)


def sort_key(path: str) -> tuple[str, ...]:
    """Tar order: component-wise, so a directory comes right before its children."""
    return tuple(path.split("/"))


class Tree:
    """Entries of one layer, keyed by normalised path; later calls replace
    earlier ones for the same path. Methods return `self` to allow chaining."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def _put(self, entry: Entry) -> Tree:
        self._entries[entry.path] = entry
        return self

    def dir(self, path: str, mode: int = 0o755, uid: int = 0, gid: int = 0) -> Tree:
        return self._put(Entry(normalize(path), Kind.DIR, mode, uid, gid))

    def file(
        self,
        path: str,
        content: bytes | str | Path | Content,
        mode: int = 0o644,
        uid: int = 0,
        gid: int = 0,
    ) -> Tree:
        return self._put(Entry(normalize(path), Kind.FILE, mode, uid, gid, Content.of(content)))

    def symlink(self, path: str, target: str) -> Tree:
        return self._put(Entry(normalize(path), Kind.SYMLINK, 0o777, link=target))

    def hardlink(self, path: str, target: str) -> Tree:
        """`path` becomes another name of the file `target` (added before or after)."""
        return self._put(Entry(normalize(path), Kind.HARDLINK, link=normalize(target)))

    def whiteout(self, path: str) -> Tree:
        """Delete `path` of a lower layer: an empty `.wh.<name>` file beside it."""
        parent, name = posixpath.split(normalize(path))
        return self.file(posixpath.join(parent, WHITEOUT_PREFIX + name), b"", mode=0o644)

    def opaque(self, directory: str, mode: int = 0o755) -> Tree:
        """Hide everything lower layers have in `directory` (kept, emptied)."""
        d = normalize(directory)
        if d not in self._entries:
            self.dir(d, mode)
        return self.file(posixpath.join(d, OPAQUE_WHITEOUT), b"", mode=0o644)

    def entries(self) -> list[Entry]:
        """The tar entries in order; see the module docstring."""
        entries = dict(self._entries)
        for path in list(entries):
            parent = posixpath.dirname(path)
            while parent and parent not in entries:
                entries[parent] = Entry(parent, Kind.DIR, 0o755)
                parent = posixpath.dirname(parent)
            if parent and entries[parent].kind is not Kind.DIR:
                raise ValueError(f"{path!r} is below {parent!r}, which is not a directory")
        # Hard-link groups: every member of a group names one FILE entry.
        groups: dict[str, list[str]] = {}
        for path, e in entries.items():
            if e.kind is Kind.HARDLINK:
                groups.setdefault(_link_root(entries, path), []).append(path)
        for root, links in groups.items():
            members = sorted([root, *links], key=sort_key)
            first = members[0]
            entries[first] = replace(entries[root], path=first)
            for m in members[1:]:
                entries[m] = Entry(m, Kind.HARDLINK, entries[root].mode, link=first)
        return [entries[p] for p in sorted(entries, key=sort_key)]


def _link_root(entries: dict[str, Entry], path: str) -> str:
    seen = {path}
    target = entries[path].link
    while True:
        e = entries.get(target)
        if e is None:
            raise ValueError(f"hard link {path!r} -> {target!r}: target not in this layer")
        if e.kind is Kind.FILE:
            return target
        if e.kind is not Kind.HARDLINK or target in seen:
            raise ValueError(f"hard link {path!r} -> {target!r}: target is not a regular file")
        seen.add(target)
        target = e.link
