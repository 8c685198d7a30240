"""The image store: image records, their names, holds, and garbage collection.

An image is identified by `sha256:<config digest>` and carries the names it
was pulled or imported under (`repo_tags`, `repo_digests`), the manifest it
came from and its layers (blob digest, diff ID, chain ID). Records and holds
live in one `index.json` under the store root, replaced atomically (temporary
file, fsync, rename) under an exclusive `flock`, so the CLI (`skiff image
import`) and a running runtime can share a root: readers notice the new file
and reload. Layer directories and blobs come from `LayerStore` and
`ContentStore`; this module decides which of them are still needed.

Rules, as containerd's CRI plugin has them: a name belongs to one image (a
new pull of a tag moves it); RemoveImage by any name or id removes the whole
image; an image held by a container is never deleted (it loses its names and
is collected when its last holder releases it); in-flight pulls protect what
they wrote with a lease until their image is recorded.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from machinery.atomicfile import write_atomic
from runtime.errors import NotFound
from runtime.image import reference
from runtime.image.content import ContentStore, pid_alive
from runtime.image.layers import LayerStore

log = logging.getLogger("skiff.runtime.image.store")

INDEX_VERSION = 1


@dataclass(frozen=True)
class LayerRef:
    digest: str
    size: int
    media_type: str
    diff_id: str
    chain_id: str


@dataclass(frozen=True)
class ImageRecord:
    """One image. `config` is the full OCI image config JSON."""

    id: str
    repo_tags: tuple[str, ...]
    repo_digests: tuple[str, ...]
    size: int
    config: dict[str, Any]
    manifest_digest: str
    manifest_media_type: str
    layers: tuple[LayerRef, ...]
    extra_blobs: tuple[str, ...] = ()
    pinned: bool = False

    @property
    def config_digest(self) -> str:
        return self.id

    def blobs(self) -> set[str]:
        return {
            self.id,
            self.manifest_digest,
            *self.extra_blobs,
            *(lr.digest for lr in self.layers),
        }


@dataclass
class _Index:
    images: dict[str, dict[str, Any]] = field(default_factory=dict)
    holds: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"version": INDEX_VERSION, "images": self.images, "holds": self.holds}


def _record_to_json(rec: ImageRecord) -> dict[str, Any]:
    return {
        "repo_tags": list(rec.repo_tags),
        "repo_digests": list(rec.repo_digests),
        "size": rec.size,
        "manifest_digest": rec.manifest_digest,
        "manifest_media_type": rec.manifest_media_type,
        "layers": [
            [lr.digest, lr.size, lr.media_type, lr.diff_id, lr.chain_id] for lr in rec.layers
        ],
        "extra_blobs": list(rec.extra_blobs),
        "pinned": rec.pinned,
    }


class ImageStore:
    """Images under `root` (blobs/, layers/, index.json)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.content = ContentStore(root)
        self.layers = LayerStore(root)
        self._index_path = root / "index.json"
        self._lock_path = root / "index.lock"
        self._lease_dir = root / "leases"
        self._lease_dir.mkdir(exist_ok=True)
        self._mutex = threading.RLock()
        self._index = _Index()
        self._stamp: tuple[int, int] | None = None
        self._configs: dict[str, dict[str, Any]] = {}
        self._leases: dict[int, tuple[set[str], set[str]]] = {}
        self._lease_seq = 0
        with self._flock():
            self.content.clean_ingest()
            self.layers.clean_tmp()
            self._reload(force=True)

    # -- persistence ----------------------------------------------------

    @contextlib.contextmanager
    def _flock(self) -> Iterator[None]:
        with self._mutex:
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)

    def _reload(self, force: bool = False) -> None:
        try:
            st = os.stat(self._index_path)
        except FileNotFoundError:
            self._index, self._stamp = _Index(), None
            return
        stamp = (st.st_ino, st.st_mtime_ns)
        if not force and stamp == self._stamp:
            return
        doc = json.loads(self._index_path.read_text())
        self._index = _Index(images=doc.get("images", {}), holds=doc.get("holds", {}))
        self._stamp = stamp

    def _save(self) -> None:
        data = json.dumps(self._index.to_json(), indent=1, sort_keys=True)
        write_atomic(self._index_path, data, durable=True, mode=0o600)
        st = os.stat(self._index_path)
        self._stamp = (st.st_ino, st.st_mtime_ns)

    def _fresh(self) -> _Index:
        with self._mutex:
            self._reload()
            return self._index

    def _record(self, image_id: str, raw: dict[str, Any]) -> ImageRecord:
        config = self._configs.get(image_id)
        if config is None:
            config = json.loads(self.content.read(image_id))
            self._configs[image_id] = config
        return ImageRecord(
            id=image_id,
            repo_tags=tuple(raw["repo_tags"]),
            repo_digests=tuple(raw["repo_digests"]),
            size=int(raw["size"]),
            config=config,
            manifest_digest=raw["manifest_digest"],
            manifest_media_type=raw["manifest_media_type"],
            layers=tuple(LayerRef(d, int(s), m, di, c) for d, s, m, di, c in raw["layers"]),
            extra_blobs=tuple(raw.get("extra_blobs", ())),
            pinned=bool(raw.get("pinned", False)),
        )

    # -- queries ----------------------------------------------------------

    def images(self) -> list[ImageRecord]:
        with self._mutex:
            index = self._fresh()
            return [self._record(i, raw) for i, raw in sorted(index.images.items())]

    def get(self, image_id: str) -> ImageRecord | None:
        with self._mutex:
            raw = self._fresh().images.get(image_id)
            return None if raw is None else self._record(image_id, raw)

    def resolve(self, ref: str) -> ImageRecord:
        """An image by id (`sha256:<hex>` or bare hex), unique id prefix, tag or
        digest reference; NotFound otherwise (InvalidArgument if unparsable)."""
        found = self.find(ref)
        if found is None:
            raise NotFound(f"image {ref!r} not found")
        return found

    def find(self, ref: str) -> ImageRecord | None:
        with self._mutex:
            images = self._fresh().images
            if reference.is_sha256_digest(ref) and ref in images:
                return self._record(ref, images[ref])
            if reference.is_hex_id(ref) and f"sha256:{ref}" in images:
                return self._record(f"sha256:{ref}", images[f"sha256:{ref}"])
            by_name = self._find_by_name(ref, images)
            if by_name is not None:
                return by_name
            hexpart = ref.removeprefix("sha256:")
            is_hex = bool(hexpart) and all(c in "0123456789abcdef" for c in hexpart)
            if is_hex and len(hexpart) >= 4:
                hits = [i for i in images if i.startswith(f"sha256:{hexpart}")]
                if len(hits) == 1:
                    return self._record(hits[0], images[hits[0]])
                return None
            if not ref.startswith("sha256:"):
                reference.parse(ref)  # garbage is InvalidArgument, not "not found"
            return None

    def _find_by_name(self, ref: str, images: dict[str, dict[str, Any]]) -> ImageRecord | None:
        try:
            parsed = reference.parse(ref)
        except Exception:
            return None
        if parsed.digest is not None:
            want, key = parsed.with_digest(parsed.digest), "repo_digests"
        else:
            want, key = parsed.tagged(), "repo_tags"
        for image_id, raw in images.items():
            if want in raw[key]:
                return self._record(image_id, raw)
        return None

    def layer_dirs(self, rec: ImageRecord) -> list[Path]:
        """Unpacked layers of `rec`, bottom first, each ready as an overlay lowerdir."""
        out = []
        for lr in rec.layers:
            fs = self.layers.fs(lr.chain_id)
            if not fs.is_dir():
                raise NotFound(f"image {rec.id}: layer {lr.chain_id} is not unpacked")
            out.append(fs)
        return out

    def holders(self, image_id: str) -> list[str]:
        return list(self._fresh().holds.get(image_id, []))

    def usage(self) -> tuple[int, int]:
        """(bytes, inodes) used by blobs and unpacked layers."""
        total_bytes = 0
        inodes = 0
        for digest in self.content.digests():
            try:
                total_bytes += self.content.size(digest)
                inodes += 1
            except FileNotFoundError:
                continue
        for chain in self.layers.chain_ids():
            try:
                info = self.layers.info(chain)
            except (FileNotFoundError, ValueError, KeyError):
                continue
            total_bytes += info.bytes
            inodes += info.inodes
        return total_bytes, inodes

    # -- mutations --------------------------------------------------------

    @contextlib.contextmanager
    def lease(self, blobs: Iterable[str], chains: Iterable[str]) -> Iterator[None]:
        """Protect blobs and layers an in-flight pull wrote from GC until it
        ends, in this process (memory) and in others sharing the root (a
        `leases/<pid>-<n>.json` file, honoured while that pid lives)."""
        blob_set, chain_set = set(blobs), set(chains)
        with self._mutex:
            self._lease_seq += 1
            key = self._lease_seq
            self._leases[key] = (blob_set, chain_set)
        path = self._lease_dir / f"{os.getpid()}-{key}.json"
        lease = {"blobs": sorted(blob_set), "chains": sorted(chain_set)}
        write_atomic(path, json.dumps(lease), durable=False)  # lives as long as this process
        try:
            yield
        finally:
            path.unlink(missing_ok=True)
            with self._mutex:
                del self._leases[key]

    def _foreign_leases(self) -> Iterator[tuple[set[str], set[str]]]:
        for entry in os.scandir(self._lease_dir):
            pid = entry.name.split("-", 1)[0]
            if pid == str(os.getpid()) or not entry.name.endswith(".json"):
                continue
            if not pid_alive(pid):
                Path(entry.path).unlink(missing_ok=True)
                continue
            try:
                doc = json.loads(Path(entry.path).read_text())
            except (OSError, ValueError):
                continue
            yield set(doc.get("blobs", ())), set(doc.get("chains", ()))

    def add(self, rec: ImageRecord) -> ImageRecord:
        """Record `rec` (its blobs and layers must be in place), merging names
        with an existing record of the same id and taking its names from
        any other image; images left nameless and unheld are deleted."""
        with self._flock():
            self._reload()
            images = self._index.images
            names = set(rec.repo_tags) | set(rec.repo_digests)
            existing = images.get(rec.id)
            if existing is not None:
                tags = tuple(dict.fromkeys([*existing["repo_tags"], *rec.repo_tags]))
                digests = tuple(dict.fromkeys([*existing["repo_digests"], *rec.repo_digests]))
                rec = replace(rec, repo_tags=tags, repo_digests=digests)
            orphaned = []
            for other_id, raw in images.items():
                if other_id == rec.id:
                    continue
                if names & (set(raw["repo_tags"]) | set(raw["repo_digests"])):
                    raw["repo_tags"] = [t for t in raw["repo_tags"] if t not in names]
                    raw["repo_digests"] = [d for d in raw["repo_digests"] if d not in names]
                    if not raw["repo_tags"] and not raw["repo_digests"]:
                        orphaned.append(other_id)
            images[rec.id] = _record_to_json(rec)
            self._configs[rec.id] = rec.config
            deleted = [i for i in orphaned if not self._index.holds.get(i)]
            for i in deleted:
                del images[i]
            self._save()
            replaced = existing is not None and existing["manifest_digest"] != rec.manifest_digest
            if deleted or replaced:
                self._gc_locked()
            return self._record(rec.id, images[rec.id])

    def remove(self, ref: str) -> ImageRecord | None:
        """Remove the image `ref` names (all its names); held images are kept
        nameless until released. Unknown images are not an error (None)."""
        with self._flock():
            self._reload()
            rec = self.find(ref)
            if rec is None:
                return None
            if self._index.holds.get(rec.id):
                raw = self._index.images[rec.id]
                raw["repo_tags"], raw["repo_digests"] = [], []
                log.info(
                    "image=%s is in use by %s: kept without names",
                    rec.id,
                    self._index.holds[rec.id],
                )
            else:
                del self._index.images[rec.id]
            self._save()
            self._gc_locked()
            return rec

    def hold(self, image_id: str, holder: str) -> None:
        """Mark `image_id` as used by `holder` (a container id); persisted."""
        with self._flock():
            self._reload()
            if image_id not in self._index.images:
                raise NotFound(f"image {image_id!r} not found")
            holders = self._index.holds.setdefault(image_id, [])
            if holder not in holders:
                holders.append(holder)
                self._save()

    def release(self, image_id: str, holder: str) -> None:
        """Undo `hold`; a nameless image with no holders left is deleted."""
        with self._flock():
            self._reload()
            holders = self._index.holds.get(image_id, [])
            if holder not in holders:
                return
            holders.remove(holder)
            if not holders:
                del self._index.holds[image_id]
                raw = self._index.images.get(image_id)
                if raw is not None and not raw["repo_tags"] and not raw["repo_digests"]:
                    del self._index.images[image_id]
                    self._save()
                    self._gc_locked()
                    return
            self._save()

    def gc(self) -> tuple[int, int]:
        """Delete blobs and layers no image or lease needs; (blobs, layers) removed."""
        with self._flock():
            self._reload()
            return self._gc_locked()

    def _gc_locked(self) -> tuple[int, int]:
        keep_blobs: set[str] = set()
        keep_chains: set[str] = set()
        for image_id, raw in self._index.images.items():
            rec_blobs = {image_id, raw["manifest_digest"], *raw.get("extra_blobs", ())}
            for d, _s, _m, _di, c in raw["layers"]:
                rec_blobs.add(d)
                keep_chains.add(c)
            keep_blobs |= rec_blobs
        for blobs, chains in [*self._leases.values(), *self._foreign_leases()]:
            keep_blobs |= blobs
            keep_chains |= chains
        nblobs = nlayers = 0
        for digest in list(self.content.digests()):
            if digest not in keep_blobs:
                self.content.delete(digest)
                self._configs.pop(digest, None)
                nblobs += 1
        for chain in self.layers.chain_ids():
            if chain not in keep_chains:
                self.layers.delete(chain)
                nlayers += 1
        if nblobs or nlayers:
            log.info("gc removed blobs=%d layers=%d", nblobs, nlayers)
        return nblobs, nlayers
