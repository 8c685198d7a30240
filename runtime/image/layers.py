"""Unpacked layers, one overlay-ready directory per chain ID.

`layers/<chain hex>/fs` is a layer's own diff in overlayfs form (usable as a
lowerdir as it is) and `layers/<chain hex>/layer.json` records its diff ID and
usage. Keying by chain ID (the OCI image-spec's identity of a layer *and* all
layers below it) means an image that shares a base with another stores that
base once. A layer is unpacked into `layers/tmp-*` and renamed into place only
after its blob digest and diff ID were verified, so a directory named by a
chain ID is always complete. This module never talks to a registry.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from machinery.atomicfile import move_aside, publish
from runtime.image.content import digest_hex, pid_alive

if TYPE_CHECKING:  # the unpacker (tarfile, zstandard, zlib-ng) loads with the first pull
    from runtime.image.unpack import LayerStats

TMP_PREFIX = "tmp-"


def chain_ids(diff_ids: list[str]) -> list[str]:
    """ChainID(L0) = DiffID(L0); ChainID(Ln) = sha256(ChainID(Ln-1) + " " + DiffID(Ln))."""
    out: list[str] = []
    for diff in diff_ids:
        if not out:
            out.append(diff)
        else:
            out.append("sha256:" + hashlib.sha256(f"{out[-1]} {diff}".encode()).hexdigest())
    return out


@dataclass(frozen=True)
class LayerInfo:
    chain_id: str
    diff_id: str
    bytes: int
    inodes: int


class LayerStore:
    def __init__(self, root: Path) -> None:
        self.dir = root / "layers"
        self.dir.mkdir(parents=True, exist_ok=True)
        # private: a setuid file in a layer must not be reachable, let alone
        # executable, by a host user (the CVE-2021-41091 class)
        os.chmod(self.dir, 0o700)

    def clean_tmp(self) -> None:
        """Drop half-unpacked layers of killed processes (a live process's stay)."""
        for entry in os.scandir(self.dir):
            if not entry.name.startswith(TMP_PREFIX):
                continue
            owner = entry.name.removeprefix(TMP_PREFIX).split("-", 1)[0]
            if owner == "rm" or not pid_alive(owner):
                shutil.rmtree(entry.path, ignore_errors=True)

    def path(self, chain_id: str) -> Path:
        return self.dir / digest_hex(chain_id)

    def fs(self, chain_id: str) -> Path:
        return self.path(chain_id) / "fs"

    def has(self, chain_id: str) -> bool:
        return (self.path(chain_id) / "layer.json").is_file()

    def info(self, chain_id: str) -> LayerInfo:
        doc = json.loads((self.path(chain_id) / "layer.json").read_text())
        return LayerInfo(chain_id, doc["diff_id"], int(doc["bytes"]), int(doc["inodes"]))

    def new_tmp(self) -> Path:
        """A fresh private directory with an empty `fs` inside to unpack into."""
        tmp = self.dir / f"{TMP_PREFIX}{os.getpid()}-{uuid.uuid4().hex}"
        tmp.mkdir(mode=0o700)
        (tmp / "fs").mkdir(mode=0o755)
        return tmp

    def commit(self, tmp: Path, chain_id: str, diff_id: str, stats: LayerStats) -> None:
        """Publish an unpacked layer; if another writer won the race, keep theirs."""
        meta = {
            "chain_id": chain_id,
            "diff_id": diff_id,
            "bytes": stats.bytes,
            "inodes": stats.inodes,
        }
        (tmp / "layer.json").write_text(json.dumps(meta))
        try:
            publish(tmp, self.path(chain_id))
        except OSError:
            if not self.has(chain_id):
                raise
            shutil.rmtree(tmp, ignore_errors=True)

    def delete(self, chain_id: str) -> None:
        path = self.path(chain_id)
        if not path.exists():
            return
        # Rename first so a half-deleted layer never looks complete.
        doomed = self.dir / f"{TMP_PREFIX}rm-{uuid.uuid4().hex}"
        move_aside(path, doomed)
        shutil.rmtree(doomed, ignore_errors=True)

    def chain_ids(self) -> list[str]:
        return [
            "sha256:" + e.name
            for e in os.scandir(self.dir)
            if not e.name.startswith(TMP_PREFIX) and len(e.name) == 64
        ]
