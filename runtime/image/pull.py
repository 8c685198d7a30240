"""Pulling an image: resolve a reference to a manifest, fetch and unpack its
layers, record the image.

Steps: try each endpoint for the reference (mirrors first, see `config.py`)
until one has the manifest; pick the host platform out of an index; fetch
the config; compute chain IDs; for each layer not already unpacked, stream
the blob once through digest verification into the content store *and*
through decompression and diff-ID verification into a fresh layer directory
(several layers at a time); publish blobs and layers only once verified;
record the image last. Whatever fails leaves nothing but complete, verified
layers behind, and the next pull reuses them.

Concurrent pulls of the same reference share one pull, and concurrent pulls
of different images that share a layer share that layer's download
(`SingleFlight`). This module never touches gRPC.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from runtime.errors import NotFound, Unavailable, Unimplemented
from runtime.image import mediatypes, reference
from runtime.image.config import Credentials, RegistryConfig
from runtime.image.content import CHUNK, Readable, sha256_of
from runtime.image.errors import BadContent
from runtime.image.layers import chain_ids
from runtime.image.readahead import Readahead
from runtime.image.registry import PullSettings, RepositoryClient
from runtime.image.store import ImageRecord, ImageStore, LayerRef
from runtime.image.unpack import Limits, unpack_layer

log = logging.getLogger("skiff.runtime.image.pull")

T = TypeVar("T")


@dataclass
class _Call(Generic[T]):
    done: threading.Event
    value: T | None = None
    error: BaseException | None = None


class SingleFlight(Generic[T]):
    """Run one call per key at a time; concurrent callers share its outcome."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[str, _Call[T]] = {}

    def do(self, key: str, fn: Callable[[], T]) -> T:
        with self._lock:
            call = self._calls.get(key)
            leader = call is None
            if call is None:
                call = self._calls[key] = _Call(threading.Event())
        if not leader:
            call.done.wait()
            if call.error is not None:
                raise call.error
            assert call.value is not None
            return call.value
        try:
            call.value = fn()
            return call.value
        except BaseException as exc:
            call.error = exc
            raise
        finally:
            with self._lock:
                del self._calls[key]
            call.done.set()


def fetch_layer(
    store: ImageStore,
    open_blob: Callable[[], Readable],
    layer: LayerRef,
    *,
    unpack: bool,
    pipelined: bool = False,
    limits: Limits | None = None,
) -> None:
    """Stream one layer blob into the content store and (if `unpack`) into its
    layer directory, verifying blob digest, size and diff ID before publishing.

    `pipelined`: download (with the blob's digest and its copy into the store),
    inflate (with the diff ID's digest) and extraction each run in a thread of
    their own, a few chunks apart. That pays when this layer is the only work
    at hand; when other layers are fetched beside it, they already keep the
    cores busy and handing chunks between threads only costs CPU (measured:
    15-25% more per byte), so one thread does all of a layer."""
    tmp = store.layers.new_tmp() if unpack else None
    try:
        with store.content.ingest(layer.digest, layer.size) as ing:
            source = open_blob()
            try:
                raw = ing.reader(source)
                if tmp is None:
                    raw.drain()
                else:
                    with contextlib.ExitStack() as stack:
                        fetched: Readable = raw
                        if pipelined:
                            fetched = stack.enter_context(Readahead(raw, name="layer-fetch"))
                        try:
                            stats, diff_id = unpack_layer(
                                fetched, tmp / "fs", readahead=pipelined, limits=limits
                            )
                        except BadContent as exc:
                            _drain(fetched)
                            if raw.digest != layer.digest:
                                raise BadContent(
                                    f"layer {layer.digest}: content has digest {raw.digest} ({exc})"
                                ) from exc
                            raise type(exc)(f"layer {layer.digest}: {exc}") from exc
                        _drain(fetched)
            finally:
                close = getattr(source, "close", None)
                if close is not None:
                    close()
            if raw.digest != layer.digest or (layer.size >= 0 and raw.size != layer.size):
                ing.commit(raw)  # raises the precise BadContent
            if tmp is not None and diff_id != layer.diff_id:
                raise BadContent(
                    f"layer {layer.digest}: uncompressed digest {diff_id} does not match "
                    f"the config's diff ID {layer.diff_id}"
                )
            ing.commit(raw)
        if tmp is not None:
            store.layers.commit(tmp, layer.chain_id, layer.diff_id, stats)
            tmp = None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _drain(r: Readable) -> None:
    while r.read(CHUNK):
        pass


@dataclass(frozen=True)
class ParsedImage:
    """A platform manifest and its config, resolved and verified."""

    manifest: bytes
    manifest_digest: str
    manifest_media_type: str
    config: bytes
    config_digest: str
    layers: tuple[LayerRef, ...]


_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def _descriptor(desc: Any, what: str) -> None:
    if not isinstance(desc, dict):
        raise BadContent(f"{what}: a descriptor is not a JSON object")
    digest, size = desc.get("digest"), desc.get("size")
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        raise BadContent(f"{what}: descriptor digest {str(digest)[:80]!r} is not sha256:<hex>")
    # downloads are capped at the declared size: a descriptor without one is refused
    if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size < 1 << 50:
        raise BadContent(f"{what}: descriptor {digest} has no valid size")
    if not isinstance(desc.get("mediaType", ""), str):
        raise BadContent(f"{what}: descriptor {digest} has a non-string mediaType")
    plat = desc.get("platform", {})
    if not isinstance(plat, dict) or not all(isinstance(v, str | list) for v in plat.values()):
        raise BadContent(f"{what}: descriptor {digest} has a malformed platform")


def validate_manifest_doc(doc: Any, what: str) -> None:
    """The shape of a manifest or index, before anything reads its fields:
    lists of descriptors, each with a sha256 digest and a size."""
    if not isinstance(doc, dict):
        raise BadContent(f"{what} is not a JSON object")
    for key in ("layers", "manifests"):
        if key in doc:
            if not isinstance(doc[key], list):
                raise BadContent(f"{what}: {key} is not a list")
            for desc in doc[key]:
                _descriptor(desc, what)
    if "config" in doc:
        _descriptor(doc["config"], f"{what} config")
    if not isinstance(doc.get("mediaType", ""), str):
        raise BadContent(f"{what}: mediaType is not a string")


def parse_manifest(
    manifest: bytes, media_type: str, config: bytes, config_digest: str
) -> ParsedImage:
    """Check a platform manifest against its config; LayerRefs with chain IDs."""
    doc = _json(manifest, "manifest")
    validate_manifest_doc(doc, "manifest")
    try:
        cfg = json.loads(config)
        diff_ids = list(cfg["rootfs"]["diff_ids"])
    except (ValueError, KeyError, TypeError) as exc:
        raise BadContent(f"image config {config_digest} has no rootfs.diff_ids") from exc
    layers = doc.get("layers") or []
    if not isinstance(diff_ids, list) or not all(
        isinstance(d, str) and _DIGEST.fullmatch(d) for d in diff_ids
    ):
        raise BadContent(f"image config {config_digest}: diff_ids are not sha256 digests")
    if len(diff_ids) != len(layers):
        raise BadContent(
            f"manifest lists {len(layers)} layers but the config has {len(diff_ids)} diff IDs"
        )
    chains = chain_ids(diff_ids)
    refs = tuple(
        LayerRef(
            digest=str(layer["digest"]),
            size=int(layer.get("size", -1)),
            media_type=str(layer.get("mediaType", "")),
            diff_id=diff,
            chain_id=chain,
        )
        for layer, diff, chain in zip(layers, diff_ids, chains, strict=True)
    )
    return ParsedImage(manifest, sha256_of(manifest), media_type, config, config_digest, refs)


class Puller:
    def __init__(
        self, store: ImageStore, registries: RegistryConfig, settings: PullSettings | None = None
    ) -> None:
        self.store = store
        self.registries = registries
        self.settings = settings or PullSettings()
        self._pulls: SingleFlight[ImageRecord] = SingleFlight()
        self._layers: SingleFlight[bool] = SingleFlight()

    def pull(self, ref: str, credentials: Credentials | None = None) -> ImageRecord:
        parsed = reference.parse(ref)
        return self._pulls.do(str(parsed), lambda: self._pull(parsed, credentials or Credentials()))

    def _pull(self, ref: reference.Reference, creds: Credentials) -> ImageRecord:
        start = time.monotonic()
        target = ref.digest or ref.tag or reference.DEFAULT_TAG
        failures: list[Exception] = []
        for endpoint in self.registries.endpoints(ref.domain, ref.path):
            # credentials given for the image's registry go to it, not to a
            # mirror on another host (a mirror has its own, from the config)
            own = not endpoint.is_mirror or endpoint.host == ref.domain
            client = RepositoryClient(endpoint, creds if own else Credentials(), self.settings)
            try:
                body, media_type, _ = client.get_manifest(target)
            except (NotFound, Unavailable) as exc:
                log.info("ref=%s endpoint=%s miss: %s", ref, endpoint.url, exc)
                failures.append(exc)
                continue
            rec = self._pull_from(client, ref, body, media_type)
            log.info(
                "ref=%s id=%s pulled in %.0f ms", ref, rec.id, (time.monotonic() - start) * 1000
            )
            return rec
        if not failures:
            raise Unavailable(f"no registry endpoint configured for {ref.domain}")
        message = "; ".join(str(f) for f in failures)
        last = type(failures[-1])
        if all(isinstance(f, last) for f in failures):
            raise last(f"pulling {ref}: {message}")
        if all(isinstance(f, NotFound) for f in failures):
            raise NotFound(f"pulling {ref}: {message}")
        raise Unavailable(f"pulling {ref}: {message}")

    def _pull_from(
        self, client: RepositoryClient, ref: reference.Reference, body: bytes, media_type: str
    ) -> ImageRecord:
        top_digest = sha256_of(body)
        if ref.digest is not None and top_digest != ref.digest:
            raise BadContent(f"manifest for {ref} has digest {top_digest}")
        doc = _json(body, f"manifest of {ref}")
        validate_manifest_doc(doc, f"manifest of {ref}")
        kind = mediatypes.detect_type(doc, media_type)
        extra: dict[str, bytes] = {}
        if kind in mediatypes.INDEX_TYPES:
            desc = mediatypes.select_platform(doc)
            if desc is None:
                os_, arch, _ = mediatypes.host_platform()
                raise NotFound(f"{ref}: the index has no manifest for {os_}/{arch}")
            extra[top_digest] = body
            body, media_type, _ = client.get_manifest(str(desc["digest"]))
            if sha256_of(body) != desc["digest"]:
                raise BadContent(
                    f"manifest {desc['digest']} of {ref}: content has digest {sha256_of(body)}"
                )
            doc = _json(body, f"manifest {desc['digest']}")
            validate_manifest_doc(doc, f"manifest {desc['digest']}")
            kind = mediatypes.detect_type(doc, media_type or str(desc.get("mediaType", "")))
        if kind in mediatypes.DOCKER_SCHEMA1:
            raise Unimplemented(f"{ref}: Docker schema 1 manifests are not supported")
        if kind not in mediatypes.MANIFEST_TYPES:
            raise BadContent(f"{ref}: unsupported manifest media type {kind!r}")
        config_digest = str((doc.get("config") or {}).get("digest", ""))
        if self.store.content.has(config_digest):
            config = self.store.content.read(config_digest)
        else:
            with client.open_blob(config_digest) as resp:
                config = resp.read(16 << 20)
            if sha256_of(config) != config_digest:
                raise BadContent(
                    f"config {config_digest} of {ref}: content has digest {sha256_of(config)}"
                )
        image = parse_manifest(body, kind, config, config_digest)
        blobs = {image.manifest_digest, config_digest, *extra, *(lr.digest for lr in image.layers)}
        with self.store.lease(blobs, {lr.chain_id for lr in image.layers}):
            self._fetch_layers(client, image.layers)
            self.store.content.write(config_digest, config)
            self.store.content.write(image.manifest_digest, body)
            for digest, data in extra.items():
                self.store.content.write(digest, data)
            repo_digest = ref.with_digest(top_digest)
            tags = () if ref.digest is not None else (ref.tagged(),)
            rec = ImageRecord(
                id=config_digest,
                repo_tags=tags,
                repo_digests=(repo_digest,),
                size=image_size(image),
                config=_json(config, "image config"),
                manifest_digest=image.manifest_digest,
                manifest_media_type=kind,
                layers=image.layers,
                extra_blobs=tuple(extra),
            )
            return self.store.add(rec)

    def _fetch_layers(self, client: RepositoryClient, layers: tuple[LayerRef, ...]) -> None:
        todo = [
            lr
            for lr in layers
            if not (self.store.layers.has(lr.chain_id) and self.store.content.has(lr.digest))
        ]
        if not todo:
            return

        def one(lr: LayerRef) -> bool:
            def work() -> bool:
                unpack = not self.store.layers.has(lr.chain_id)
                if unpack or not self.store.content.has(lr.digest):
                    fetch_layer(
                        self.store,
                        lambda: client.open_blob(lr.digest),
                        lr,
                        unpack=unpack,
                        pipelined=pipelined,
                        limits=Limits.for_blob(lr.size, self.settings.max_layer_expansion),
                    )
                return True

            return self._layers.do(f"{lr.chain_id}/{lr.digest}", work)

        workers = max(1, min(self.settings.max_concurrent_downloads, len(todo)))
        # Layers side by side keep the cores busy when there are enough of
        # them; otherwise the stages of each layer run side by side instead.
        pipelined = len(todo) < (os.cpu_count() or 1)
        if workers == 1:
            for lr in todo:
                one(lr)
            return
        with ThreadPoolExecutor(workers, thread_name_prefix="pull") as pool:
            futures = [pool.submit(one, lr) for lr in todo]
            errors = [f.exception() for f in futures]
        for err in errors:
            if err is not None:
                raise err


def image_size(image: ParsedImage) -> int:
    """Bytes of the image's content: config, manifest and compressed layers."""
    return len(image.config) + len(image.manifest) + sum(max(lr.size, 0) for lr in image.layers)


def _json(data: bytes, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise BadContent(f"{what} is not JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise BadContent(f"{what} is not a JSON object")
    return doc
