"""Image configs, manifests and indexes (OCI or Docker schema 2) from layers.

`build_image` writes the config and manifest JSON into the blob store and
returns an `Image`; `build_index` does the same for an OCI index or Docker
manifest list over several platform images. JSON is compact and in a fixed
key order with pinned timestamps, so digests are reproducible. Nothing here
touches the network.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.harness.images.content import (
    DOCKER_CONFIG,
    DOCKER_MANIFEST,
    DOCKER_MANIFEST_LIST,
    OCI_CONFIG,
    OCI_INDEX,
    OCI_MANIFEST,
    Blob,
    BlobStore,
    canonical_json,
)
from tests.harness.images.layers import EPOCH_ISO, Format, Layer

DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class Platform:
    os: str = "linux"
    architecture: str = "amd64"
    variant: str = ""

    def to_json(self) -> dict[str, str]:
        out = {"architecture": self.architecture, "os": self.os}
        if self.variant:
            out["variant"] = self.variant
        return out

    @classmethod
    def parse(cls, text: str) -> Platform:
        """`linux/arm64/v8` -> Platform("linux", "arm64", "v8")."""
        parts = text.split("/")
        if not 2 <= len(parts) <= 3:
            raise ValueError(f"bad platform {text!r}")
        return cls(parts[0], parts[1], parts[2] if len(parts) == 3 else "")

    def __str__(self) -> str:
        return "/".join(p for p in (self.os, self.architecture, self.variant) if p)


LINUX_AMD64 = Platform("linux", "amd64")
LINUX_ARM64 = Platform("linux", "arm64", "v8")


@dataclass(frozen=True)
class ImageConfig:
    """The runtime part of an image config (`config` in the OCI spec)."""

    entrypoint: Sequence[str] | None = None
    cmd: Sequence[str] | None = None
    env: Sequence[str] = (DEFAULT_PATH,)
    working_dir: str = ""
    user: str = ""
    exposed_ports: Sequence[str] = ()  # "80/tcp"
    volumes: Sequence[str] = ()
    stop_signal: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.user:
            out["User"] = self.user
        if self.exposed_ports:
            out["ExposedPorts"] = {p: {} for p in sorted(self.exposed_ports)}
        if self.env:
            out["Env"] = list(self.env)
        if self.entrypoint is not None:
            out["Entrypoint"] = list(self.entrypoint)
        if self.cmd is not None:
            out["Cmd"] = list(self.cmd)
        if self.volumes:
            out["Volumes"] = {v: {} for v in sorted(self.volumes)}
        if self.working_dir:
            out["WorkingDir"] = self.working_dir
        if self.labels:
            out["Labels"] = dict(sorted(self.labels.items()))
        if self.stop_signal:
            out["StopSignal"] = self.stop_signal
        return out


@dataclass(frozen=True)
class Image:
    """One single-platform image whose blobs are all in a `BlobStore`."""

    name: str  # a suggested repository name, e.g. "busybox"
    tag: str
    manifest: Blob
    config: Blob
    layers: tuple[Layer, ...]
    layer_blobs: tuple[Blob, ...]  # the layers with this format's media types
    platform: Platform
    format: Format

    @property
    def digest(self) -> str:
        return self.manifest.digest

    @property
    def manifest_digest(self) -> str:
        return self.manifest.digest

    @property
    def config_digest(self) -> str:
        return self.config.digest

    @property
    def layer_digests(self) -> list[str]:
        return [layer.digest for layer in self.layers]

    @property
    def diff_ids(self) -> list[str]:
        return [layer.diff_id for layer in self.layers]

    @property
    def media_type(self) -> str:
        return self.manifest.media_type

    def blobs(self) -> list[Blob]:
        """Everything the manifest references, layers first."""
        return [*self.layer_blobs, self.config]


@dataclass(frozen=True)
class Index:
    """An OCI image index or Docker manifest list over platform images."""

    name: str
    tag: str
    manifest: Blob
    images: tuple[Image, ...]
    format: Format

    @property
    def digest(self) -> str:
        return self.manifest.digest

    @property
    def manifest_digest(self) -> str:
        return self.manifest.digest

    @property
    def media_type(self) -> str:
        return self.manifest.media_type

    def image_for(self, platform: Platform | str) -> Image:
        want = Platform.parse(platform) if isinstance(platform, str) else platform
        for image in self.images:
            if image.platform == want:
                return image
        raise KeyError(f"no {want} image in {self.name}:{self.tag}")

    def __iter__(self) -> Iterator[Image]:
        return iter(self.images)


def config_json(
    layers: Sequence[Layer],
    config: ImageConfig,
    platform: Platform,
    history: Sequence[str] | None = None,
) -> dict[str, Any]:
    created_by = list(history or [])
    created_by += [f"layer {i}" for i in range(len(created_by), len(layers))]
    out: dict[str, Any] = {"created": EPOCH_ISO, **platform.to_json()}
    out["config"] = config.to_json()
    out["rootfs"] = {"type": "layers", "diff_ids": [layer.diff_id for layer in layers]}
    out["history"] = [{"created": EPOCH_ISO, "created_by": c} for c in created_by[: len(layers)]]
    return out


def build_image(
    store: BlobStore,
    layers: Sequence[Layer],
    config: ImageConfig | None = None,
    *,
    name: str = "image",
    tag: str = "latest",
    platform: Platform = LINUX_AMD64,
    fmt: Format = "oci",
    history: Sequence[str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Image:
    """Write the config and manifest of an image made of `layers`."""
    cfg = config_json(layers, config or ImageConfig(), platform, history)
    config_type, manifest_type = (
        (OCI_CONFIG, OCI_MANIFEST) if fmt == "oci" else (DOCKER_CONFIG, DOCKER_MANIFEST)
    )
    if fmt == "docker" and annotations:
        raise ValueError("Docker schema 2 manifests carry no annotations")
    config_blob = store.add_bytes(canonical_json(cfg), config_type)
    layer_blobs = tuple(layer.for_format(fmt) for layer in layers)
    manifest: dict[str, Any] = {"schemaVersion": 2, "mediaType": manifest_type}
    manifest["config"] = config_blob.descriptor()
    manifest["layers"] = [b.descriptor() for b in layer_blobs]
    if annotations:
        manifest["annotations"] = dict(sorted(annotations.items()))
    manifest_blob = store.add_bytes(canonical_json(manifest), manifest_type)
    return Image(name, tag, manifest_blob, config_blob, tuple(layers), layer_blobs, platform, fmt)


def build_index(
    store: BlobStore, images: Sequence[Image], *, name: str = "image", tag: str = "latest"
) -> Index:
    """An OCI index (for OCI images) or Docker manifest list (for Docker ones)."""
    formats = {image.format for image in images}
    if len(formats) != 1:
        raise ValueError(f"an index needs images of one format, got {sorted(formats)}")
    fmt = formats.pop()
    media_type = OCI_INDEX if fmt == "oci" else DOCKER_MANIFEST_LIST
    doc = {
        "schemaVersion": 2,
        "mediaType": media_type,
        "manifests": [i.manifest.descriptor(platform=i.platform.to_json()) for i in images],
    }
    blob = store.add_bytes(canonical_json(doc), media_type)
    return Index(name, tag, blob, tuple(images), fmt)
