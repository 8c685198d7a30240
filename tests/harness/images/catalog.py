"""Ready-made test images, built once per session and cached.

`TestImages(root)` keeps a blob store under `root` and memoises every layer
and image it builds, so asking twice costs nothing. Images (all on top of the
busybox layer unless said otherwise):

- `busybox()`: Cmd ["sh"].
- `web(port=80)`: busybox `httpd -f -p PORT -h /var/www` serving
  /var/www/index.html (`WEB_BODY`), ExposedPorts PORT/tcp, StopSignal SIGTERM.
- `user(user="1000")`: User set; /etc/passwd knows 1000 as default-user.
- `multilayer()`: 3 layers; the third whites out /data/remove-me.txt and
  makes /data/dir opaque (its lower a.txt and b.txt hidden, c.txt added).
- `multiarch()`: an OCI index or Docker manifest list, linux/amd64 + linux/arm64/v8
  (the arm64 child reuses the amd64 layers with its own config: a fixture for
  platform selection, not something to run on arm64).
- `sized(total_bytes, layers)`: N layers of incompressible random data
  (no busybox), for the image-pull benchmark.
- `custom(trees, config)`: busybox plus layers of your own `Tree`s.

Everything here is deterministic: the same call gives the same digests in any
session on the same busybox binary.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from tests.harness.images.busybox import BUSYBOX, busybox_tree
from tests.harness.images.content import BlobStore
from tests.harness.images.layers import Compression, Format, Layer, build_layer
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

T = TypeVar("T")
MiB = 1 << 20

WEB_BODY = "<html><body><h1>skiff test web server</h1></body></html>\n"
BUSYBOX_HISTORY = "busybox rootfs (tests.harness.images)"


class TestImages:
    """The session's image builder and cache; see the module docstring."""

    __test__ = False  # not a pytest test class despite the name

    def __init__(self, root: Path, busybox: Path = BUSYBOX) -> None:
        self.root = root
        self.busybox_path = busybox
        self.store = BlobStore(root / "blobs")
        self._cache: dict[tuple[Any, ...], Any] = {}

    def _memo(self, key: tuple[Any, ...], build: Callable[[], T]) -> T:
        if key not in self._cache:
            self._cache[key] = build()
        result: T = self._cache[key]
        return result

    # ---------------------------------------------------------------- layers

    def layer(self, key: str, tree: Callable[[], Tree], compression: Compression = "gzip") -> Layer:
        """The layer of `tree()`, built once per (key, compression)."""
        return self._memo(
            ("layer", key, compression), lambda: build_layer(self.store, tree(), compression)
        )

    def busybox_layer(self, compression: Compression = "gzip") -> Layer:
        return self.layer("busybox", lambda: busybox_tree(self.busybox_path), compression)

    def build(
        self,
        name: str,
        layers: Sequence[Layer],
        config: ImageConfig,
        *,
        tag: str = "latest",
        fmt: Format = "oci",
        platform: Platform = LINUX_AMD64,
        history: Sequence[str] | None = None,
    ) -> Image:
        return build_image(
            self.store,
            layers,
            config,
            name=name,
            tag=tag,
            platform=platform,
            fmt=fmt,
            history=history,
        )

    # ---------------------------------------------------------------- images

    def busybox(
        self,
        fmt: Format = "oci",
        compression: Compression = "gzip",
        platform: Platform = LINUX_AMD64,
    ) -> Image:
        def build() -> Image:
            return self.build(
                "busybox",
                [self.busybox_layer(compression)],
                ImageConfig(cmd=["sh"]),
                fmt=fmt,
                platform=platform,
                history=[BUSYBOX_HISTORY],
            )

        return self._memo(("busybox", fmt, compression, platform), build)

    def web(self, port: int = 80, fmt: Format = "oci", compression: Compression = "gzip") -> Image:
        def build() -> Image:
            www = self.layer(
                "web", lambda: Tree().file("var/www/index.html", WEB_BODY), compression
            )
            config = ImageConfig(
                cmd=["httpd", "-f", "-p", str(port), "-h", "/var/www"],
                exposed_ports=[f"{port}/tcp"],
                stop_signal="SIGTERM",
                labels={"org.skiff.test": "web"},
            )
            return self.build(
                "web",
                [self.busybox_layer(compression), www],
                config,
                fmt=fmt,
                history=[BUSYBOX_HISTORY, "ADD index.html /var/www/"],
            )

        return self._memo(("web", port, fmt, compression), build)

    def user(
        self, user: str = "1000", fmt: Format = "oci", compression: Compression = "gzip"
    ) -> Image:
        def build() -> Image:
            return self.build(
                "user",
                [self.busybox_layer(compression)],
                ImageConfig(cmd=["sh"], user=user),
                tag=_tag_safe(user),
                fmt=fmt,
                history=[BUSYBOX_HISTORY],
            )

        return self._memo(("user", user, fmt, compression), build)

    def multilayer(self, fmt: Format = "oci", compression: Compression = "gzip") -> Image:
        def build() -> Image:
            lower = self.layer("multilayer-2", _multilayer_lower, compression)
            upper = self.layer("multilayer-3", _multilayer_upper, compression)
            return self.build(
                "multilayer",
                [self.busybox_layer(compression), lower, upper],
                ImageConfig(cmd=["sh"], working_dir="/data", volumes=["/data/volume"]),
                fmt=fmt,
                history=[BUSYBOX_HISTORY, "ADD data /data", "RUN rm remove-me.txt; replace dir"],
            )

        return self._memo(("multilayer", fmt, compression), build)

    def multiarch(self, fmt: Format = "oci", compression: Compression = "gzip") -> Index:
        def build() -> Index:
            images = [
                self.busybox(fmt, compression, LINUX_AMD64),
                self.busybox(fmt, compression, LINUX_ARM64),
            ]
            return build_index(self.store, images, name="multiarch")

        return self._memo(("multiarch", fmt, compression), build)

    def sized(
        self,
        total_bytes: int = 100 * MiB,
        layers: int = 10,
        compression: Compression = "gzip",
        seed: int = 0,
        fmt: Format = "oci",
    ) -> Image:
        """About `total_bytes` of random data in `layers` layers (one file
        each, /data/layer-N.bin). gzip uses level 0 (stored blocks): deflate
        stores incompressible data at any level, so a puller sees the same
        work, and building 100 MB takes well under a second."""
        per_layer = max(1, total_bytes // layers)

        def one(i: int) -> Layer:
            def tree() -> Tree:
                data = Content.random(per_layer, seed * 1_000_003 + i)
                return Tree().file(f"data/layer-{i}.bin", data)

            key = ("layer", "sized", per_layer, seed, i, compression)
            return self._memo(key, lambda: build_layer(self.store, tree(), compression, 0))

        def build() -> Image:
            return self.build(
                "sized",
                [one(i) for i in range(layers)],
                ImageConfig(cmd=["/nonexistent"]),
                tag=f"{total_bytes // MiB}mib-{layers}",
                fmt=fmt,
            )

        return self._memo(("sized", total_bytes, layers, compression, seed, fmt), build)

    def custom(
        self,
        name: str,
        trees: Sequence[Tree],
        config: ImageConfig | None = None,
        *,
        tag: str = "latest",
        fmt: Format = "oci",
        compression: Compression = "gzip",
        base: bool = True,
    ) -> Image:
        """busybox (unless `base=False`) plus one layer per tree. Not cached:
        trees are not hashable, build this once where you need it."""
        layers = [self.busybox_layer(compression)] if base else []
        layers += [build_layer(self.store, t, compression) for t in trees]
        return self.build(name, layers, config or ImageConfig(cmd=["sh"]), tag=tag, fmt=fmt)

    # ---------------------------------------------------------------- output

    def layout(
        self, dest: Path, items: Sequence[Image | Index] | Mapping[str, Image | Index]
    ) -> Path:
        """Write `items` as an OCI image layout at `dest`."""
        return write_layout(dest, items)


def _multilayer_lower() -> Tree:
    return (
        Tree()
        .file("data/keep.txt", "kept from layer 2\n")
        .file("data/remove-me.txt", "whited out by layer 3\n")
        .file("data/dir/a.txt", "hidden by the opaque dir in layer 3\n")
        .file("data/dir/sub/b.txt", "hidden by the opaque dir in layer 3\n")
        .file("data/overwrite.txt", "version 2\n")
        .dir("data/volume")
    )


def _multilayer_upper() -> Tree:
    return (
        Tree()
        .whiteout("data/remove-me.txt")
        .opaque("data/dir")
        .file("data/dir/c.txt", "added by layer 3\n")
        .file("data/overwrite.txt", "version 3\n")
        .whiteout("bin/vi")  # removes one busybox applet (a hard link)
    )


def _tag_safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in text)[:128]
