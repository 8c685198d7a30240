"""Test images built in Python from Debian's busybox-static.

Layers are deterministic tars (`tree`, `layers`), images and indexes are OCI
or Docker schema 2 JSON (`manifest`), written to an OCI layout (`layout`) or
pushed with our own distribution client (`distribution`). `catalog.TestImages`
is the per-session cache of ready-made images the `test_images` fixture hands
out. Nothing here contacts anything but the registry it is given.
"""

from tests.harness.images.catalog import MiB, TestImages
from tests.harness.images.content import Blob, BlobStore
from tests.harness.images.distribution import ImageRef, RegistryClient, RegistryError
from tests.harness.images.layers import EPOCH, Compression, Format, Layer, build_layer
from tests.harness.images.layout import write_layout
from tests.harness.images.manifest import (
    LINUX_AMD64,
    LINUX_ARM64,
    Image,
    ImageConfig,
    Index,
    Platform,
    build_image,
    build_index,
)
from tests.harness.images.tree import Content, Tree

__all__ = [
    "EPOCH",
    "LINUX_AMD64",
    "LINUX_ARM64",
    "Blob",
    "BlobStore",
    "Compression",
    "Content",
    "Format",
    "Image",
    "ImageConfig",
    "ImageRef",
    "Index",
    "Layer",
    "MiB",
    "Platform",
    "RegistryClient",
    "RegistryError",
    "TestImages",
    "Tree",
    "build_image",
    "build_index",
    "build_layer",
    "write_layout",
]
