"""OCI image-spec and Docker v2 schema 2 media types, and platform matching.

Pure data and pure functions; nothing here does I/O.
"""

from __future__ import annotations

import platform as _platform
from typing import Any

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar"
OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
OCI_LAYER_ZSTD = "application/vnd.oci.image.layer.v1.tar+zstd"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar"
DOCKER_LAYER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip"
DOCKER_SCHEMA1 = (
    "application/vnd.docker.distribution.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v1+prettyjws",
)

MANIFEST_TYPES = (OCI_MANIFEST, DOCKER_MANIFEST)
INDEX_TYPES = (OCI_INDEX, DOCKER_MANIFEST_LIST)
ACCEPT_MANIFESTS = ", ".join((*MANIFEST_TYPES, *INDEX_TYPES))

_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def host_platform() -> tuple[str, str, str]:
    """(os, architecture, variant) of this machine in OCI terms."""
    machine = _platform.machine().lower()
    arch = _ARCH.get(machine, machine)
    variant = "v8" if arch == "arm64" else ""
    return "linux", arch, variant


def detect_type(doc: dict[str, Any], header_type: str) -> str:
    """The manifest's media type: its own field, else the HTTP header, else by shape."""
    media = doc.get("mediaType") or header_type
    if media in (*MANIFEST_TYPES, *INDEX_TYPES, *DOCKER_SCHEMA1):
        return str(media)
    if "manifests" in doc:
        return OCI_INDEX
    if "layers" in doc and "config" in doc:
        return OCI_MANIFEST
    if doc.get("schemaVersion") == 1:
        return DOCKER_SCHEMA1[0]
    return str(media)


def select_platform(
    index: dict[str, Any], want: tuple[str, str, str] | None = None
) -> dict[str, Any] | None:
    """The manifest descriptor of `index` for `want` (default: this host).

    An exact variant match wins over a descriptor without a variant;
    attestation entries (platform unknown/unknown) never match."""
    os_, arch, variant = want or host_platform()
    best: dict[str, Any] | None = None
    for desc in index.get("manifests", []):
        plat = desc.get("platform") or {}
        if plat.get("os") != os_ or plat.get("architecture") != arch:
            continue
        if desc.get("mediaType") not in (*MANIFEST_TYPES, None):
            continue
        got_variant = plat.get("variant", "")
        if got_variant == variant:
            return dict(desc)
        if best is None and (not got_variant or not variant):
            best = dict(desc)
    return best
