"""Offline images: import an OCI layout or `docker save` archive, export an
OCI layout archive (with a Docker `manifest.json` too, so `docker load`
accepts it).

Import goes through the same verification as a pull: every blob is hashed
against its digest while it streams into the content store, every layer's
diff ID is checked and the layer is unpacked with the same safe extractor;
the image is recorded only once all of that succeeded. Archive member names
are looked up, never extracted as paths. Export only reads the store.
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from runtime.errors import InvalidArgument, NotFound
from runtime.image import mediatypes, reference
from runtime.image.content import CHUNK, HashingReader, digest_hex, sha256_of
from runtime.image.errors import BadContent
from runtime.image.pull import fetch_layer, image_size, parse_manifest
from runtime.image.store import ImageRecord, ImageStore

NAME_ANNOTATION = "io.containerd.image.name"
REF_ANNOTATION = "org.opencontainers.image.ref.name"


class _Archive:
    def __init__(self, tf: tarfile.TarFile) -> None:
        self.tf = tf
        self.members: dict[str, tarfile.TarInfo] = {}
        for m in tf.getmembers():
            name = "/".join(p for p in m.name.split("/") if p not in ("", "."))
            if m.isreg() or m.islnk() or m.issym():
                self.members[name] = m

    def has(self, name: str) -> bool:
        return name in self.members

    def open(self, name: str) -> IO[bytes]:
        member = self.members.get(name)
        if member is None:
            raise BadContent(f"archive has no {name!r}")
        f = self.tf.extractfile(member)
        if f is None:
            raise BadContent(f"archive member {name!r} is not a file")
        return f

    def read(self, name: str, limit: int = 64 << 20) -> bytes:
        with self.open(name) as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            raise BadContent(f"archive member {name!r} is too large")
        return data

    def blob(self, digest: str) -> bytes:
        data = self.read(f"blobs/sha256/{digest_hex(digest)}")
        if sha256_of(data) != digest:
            raise BadContent(f"archive blob {digest}: content has digest {sha256_of(data)}")
        return data


def import_archive(store: ImageStore, path: Path) -> list[ImageRecord]:
    """Import every image of the archive at `path`; returns their records."""
    try:
        tf = tarfile.open(path, "r:*")  # noqa: SIM115 - closed by the with below
    except (tarfile.TarError, OSError) as exc:
        raise InvalidArgument(f"{path}: not a readable tar archive: {exc}") from exc
    with tf:
        archive = _Archive(tf)
        if archive.has("index.json") and archive.has("oci-layout"):
            return _import_oci(store, archive)
        if archive.has("manifest.json"):
            return _import_docker(store, archive)
    raise InvalidArgument(f"{path}: neither an OCI layout (index.json) nor a docker save archive")


def _names_of(desc: dict[str, Any]) -> tuple[tuple[str, ...], bool]:
    """(repo tags, is-tagged) from a layout descriptor's annotations."""
    ann = desc.get("annotations") or {}
    for key in (NAME_ANNOTATION, REF_ANNOTATION):
        value = ann.get(key)
        if not value:
            continue
        try:
            ref = reference.parse(value)
        except InvalidArgument:
            continue
        if key == REF_ANNOTATION and "/" not in value and ":" not in value and "." not in value:
            continue  # a bare tag like "latest": no repository to put it in
        return ((ref.tagged(),) if ref.digest is None else ()), True
    return (), False


def _import_oci(store: ImageStore, archive: _Archive) -> list[ImageRecord]:
    index = json.loads(archive.read("index.json"))
    out: list[ImageRecord] = []
    for desc in index.get("manifests", []):
        tags, _ = _names_of(desc)
        digest = str(desc["digest"])
        body = archive.blob(digest)
        doc = json.loads(body)
        kind = mediatypes.detect_type(doc, str(desc.get("mediaType", "")))
        extra: dict[str, bytes] = {}
        if kind in mediatypes.INDEX_TYPES:
            chosen = mediatypes.select_platform(doc)
            if chosen is None:
                raise NotFound(f"archive index {digest} has no manifest for this platform")
            extra[digest] = body
            body = archive.blob(str(chosen["digest"]))
            kind = mediatypes.detect_type(json.loads(body), str(chosen.get("mediaType", "")))
        out.append(_import_image(store, archive, body, kind, tags, extra))
    return out


def _import_docker(store: ImageStore, archive: _Archive) -> list[ImageRecord]:
    entries = json.loads(archive.read("manifest.json"))
    out: list[ImageRecord] = []
    for entry in entries:
        config = archive.read(str(entry["Config"]))
        config_digest = sha256_of(config)
        layers = []
        for name in entry["Layers"]:
            h = HashingReader(archive.open(str(name)))
            head = h.read(4)
            h.drain()
            gz = head.startswith(b"\x1f\x8b")
            media = mediatypes.DOCKER_LAYER_GZIP if gz else mediatypes.DOCKER_LAYER
            layers.append({"mediaType": media, "size": h.size, "digest": h.digest, "_name": name})
        manifest = {
            "schemaVersion": 2,
            "mediaType": mediatypes.DOCKER_MANIFEST,
            "config": {
                "mediaType": mediatypes.DOCKER_CONFIG,
                "size": len(config),
                "digest": config_digest,
            },
            "layers": [{k: v for k, v in lr.items() if k != "_name"} for lr in layers],
        }
        body = json.dumps(manifest, separators=(",", ":")).encode()
        tags = tuple(reference.parse(t).tagged() for t in entry.get("RepoTags") or [])
        files = {str(lr["digest"]): str(lr["_name"]) for lr in layers}
        out.append(
            _import_image(store, archive, body, mediatypes.DOCKER_MANIFEST, tags, {}, config, files)
        )
    return out


def _import_image(
    store: ImageStore,
    archive: _Archive,
    body: bytes,
    kind: str,
    tags: tuple[str, ...],
    extra: dict[str, bytes],
    config: bytes | None = None,
    layer_files: dict[str, str] | None = None,
) -> ImageRecord:
    if kind not in mediatypes.MANIFEST_TYPES:
        raise BadContent(f"unsupported manifest media type {kind!r}")
    doc = json.loads(body)
    config_digest = str(doc["config"]["digest"])
    if config is None:
        config = archive.blob(config_digest)
    image = parse_manifest(body, kind, config, config_digest)
    blobs = {image.manifest_digest, config_digest, *extra, *(lr.digest for lr in image.layers)}
    with store.lease(blobs, {lr.chain_id for lr in image.layers}):
        for lr in image.layers:
            unpack = not store.layers.has(lr.chain_id)
            if not unpack and store.content.has(lr.digest):
                continue
            name = (layer_files or {}).get(lr.digest) or f"blobs/sha256/{digest_hex(lr.digest)}"
            fetch_layer(  # one layer at a time: its stages run side by side
                store,
                lambda n=name: archive.open(n),  # type: ignore[misc]
                lr,
                unpack=unpack,
                pipelined=True,
            )
        store.content.write(config_digest, config)
        store.content.write(image.manifest_digest, body)
        for d, data in extra.items():
            store.content.write(d, data)
        rec = ImageRecord(
            id=config_digest,
            repo_tags=tags,
            repo_digests=(),
            size=image_size(image),
            config=json.loads(config),
            manifest_digest=image.manifest_digest,
            manifest_media_type=kind,
            layers=image.layers,
            extra_blobs=tuple(extra),
        )
        return store.add(rec)


def _add_bytes(tf: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, 0
    tf.addfile(info, io.BytesIO(data))


def export_archive(store: ImageStore, refs: Iterable[str], out: IO[bytes]) -> list[ImageRecord]:
    """Write the images `refs` name as an OCI layout tar (plus manifest.json)."""
    records = [store.resolve(r) for r in refs]
    descriptors: list[dict[str, Any]] = []
    docker: list[dict[str, Any]] = []
    blobs: dict[str, Path] = {}
    for rec in records:
        desc = {
            "mediaType": rec.manifest_media_type,
            "digest": rec.manifest_digest,
            "size": store.content.size(rec.manifest_digest),
        }
        for tag in rec.repo_tags or ("",):
            d = dict(desc)
            if tag:
                ref = reference.parse(tag)
                d["annotations"] = {NAME_ANNOTATION: tag, REF_ANNOTATION: ref.tag or "latest"}
            descriptors.append(d)
        docker.append(
            {
                "Config": f"blobs/sha256/{digest_hex(rec.id)}",
                "RepoTags": list(rec.repo_tags),
                "Layers": [f"blobs/sha256/{digest_hex(lr.digest)}" for lr in rec.layers],
            }
        )
        for digest in (rec.manifest_digest, rec.id, *(lr.digest for lr in rec.layers)):
            path = store.content.path(digest)
            if not path.is_file():
                raise NotFound(f"image {rec.id}: blob {digest} is not in the store")
            blobs[digest] = path
    index = {"schemaVersion": 2, "mediaType": mediatypes.OCI_INDEX, "manifests": descriptors}
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tf:
        _add_bytes(tf, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        _add_bytes(tf, "index.json", json.dumps(index).encode())
        _add_bytes(tf, "manifest.json", json.dumps(docker).encode())
        for digest, path in sorted(blobs.items()):
            info = tarfile.TarInfo(f"blobs/sha256/{digest_hex(digest)}")
            info.size, info.mode, info.mtime = path.stat().st_size, 0o644, 0
            with open(path, "rb", buffering=CHUNK) as f:
                tf.addfile(info, f)
    return records
