"""A stand-in for runtime.image's ImageStore for runtime tests: images are
plain directories described in `<root>/images.json`
(`{ref: {"id": ..., "config": {...}, "layers": [dir, ...]}}`), so runtime
tests need neither a registry nor the ImageService. `python -m
tests.fakes.image_store FLAGS` runs `skiff runtime FLAGS` with it."""

from __future__ import annotations

import json
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime import errors
from runtime.config import Config


@dataclass
class FakeImage:
    id: str
    repo_tags: list[str]
    repo_digests: list[str]
    size: int
    config: dict[str, Any]
    layers: list[str] = field(default_factory=list)


class FakeImageStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.lock = threading.Lock()
        self.holds: dict[str, set[str]] = {}

    def _images(self) -> dict[str, dict[str, Any]]:
        path = self.root / "images.json"
        if not path.exists():
            return {}
        data: dict[str, dict[str, Any]] = json.loads(path.read_text())
        return data

    def resolve(self, ref: str) -> FakeImage:
        for name, d in self._images().items():
            if ref in (name, d["id"]) or ref == name.split(":")[0]:
                return FakeImage(d["id"], [name], [], 0, d.get("config", {}), list(d["layers"]))
        raise errors.NotFound(f"image {ref!r} not found")

    def layer_dirs(self, rec: FakeImage) -> list[Path]:
        return [Path(p) for p in rec.layers]

    def hold(self, image_id: str, holder: str) -> None:
        with self.lock:
            self.holds.setdefault(image_id, set()).add(holder)
        self._dump()

    def release(self, image_id: str, holder: str) -> None:
        with self.lock:
            self.holds.get(image_id, set()).discard(holder)
        self._dump()

    def _dump(self) -> None:
        with self.lock:
            data = {k: sorted(v) for k, v in self.holds.items()}
        (self.root / "holds.json").write_text(json.dumps(data))


def factory(root: Path) -> tuple[FakeImageStore, None]:
    root.mkdir(parents=True, exist_ok=True)
    return FakeImageStore(root), None


def runtime_images(cfg: Config) -> tuple[FakeImageStore, None]:
    return factory(cfg.root / "images")


def main(argv: list[str]) -> int:
    """`skiff runtime ARGV` with this store in place of runtime.image's."""
    from runtime.main import main as runtime_main

    return runtime_main(argv, runtime_images)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
