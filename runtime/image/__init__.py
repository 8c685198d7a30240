"""The runtime's images: references, a registry client, the content store,
layer unpacking and the image store behind the CRI ImageService.

`build(root, registry_config, disable_default_endpoint)` wires them together
and returns the `ImageStore` (what CreateContainer uses: `resolve`,
`layer_dirs`, `hold`, `release`) and the gRPC `ImageServicer` to register.
Imports happen inside `build`, so `import runtime.image` stays cheap (the
CNI plugin and the CLI dispatcher import parts of `runtime` too).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime.cri.image_servicer import ImageServicer
    from runtime.image.pull import Puller
    from runtime.image.store import ImageStore


def build(
    root: Path,
    registry_config: Path | None,
    disable_default_endpoint: bool,
    max_layer_expansion: int = 10,
) -> tuple[ImageStore, ImageServicer]:
    """The image store under `root` and the CRI ImageService servicer over it.

    `registry_config` is a k3s-style registries.yaml (a missing file means no
    mirrors); `disable_default_endpoint` never contacts a mirrored registry
    itself (also settable in the file)."""
    from runtime.cri.image_servicer import ImageServicer
    from runtime.image import config
    from runtime.image.store import ImageStore

    store = ImageStore(root)
    registries = config.load(registry_config, disable_default_endpoint)

    def make_puller() -> Puller:  # at the first pull: the registry client's imports
        from runtime.image.pull import Puller
        from runtime.image.registry import PullSettings

        return Puller(store, registries, PullSettings(max_layer_expansion=max_layer_expansion))

    return store, ImageServicer(store, make_puller)
