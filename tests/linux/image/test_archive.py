"""Offline images: OCI layout and docker-save import, export round trip, CLI."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from runtime.image import archive, cli
from runtime.image.errors import BadContent
from runtime.image.pull import Puller
from runtime.image.store import ImageStore
from tests.harness.images import TestImages
from tests.harness.images.layers import decompress
from tests.harness.registry import Registry
from tests.linux.image.conftest import store_files

pytestmark = pytest.mark.root


def tar_dir(src: Path, dest: Path) -> Path:
    with tarfile.open(dest, "w") as tf:
        for entry in sorted(src.rglob("*")):
            tf.add(entry, arcname=str(entry.relative_to(src)), recursive=False)
    return dest


def tree_of(path: Path) -> dict[str, tuple[int, int, bytes]]:
    out = {}
    for p in sorted(path.rglob("*")):
        st = os.lstat(p)
        data = p.read_bytes() if p.is_file() and not p.is_symlink() else b""
        out[str(p.relative_to(path))] = (st.st_mode, st.st_uid, data)
    return out


def test_import_oci_layout(images: TestImages, tmp_path: Path, store: ImageStore) -> None:
    layout = images.layout(
        tmp_path / "layout",
        {"docker.io/library/imported:v1": images.web(), "multi.example/arch:x": images.multiarch()},
    )
    recs = archive.import_archive(store, tar_dir(layout, tmp_path / "layout.tar"))
    assert [r.repo_tags for r in recs] == [
        ("docker.io/library/imported:v1",),
        ("multi.example/arch:x",),
    ]
    assert store.resolve("imported:v1").id == images.web().config_digest
    assert recs[1].id == images.multiarch().image_for("linux/amd64").config_digest
    web = store.resolve("imported:v1")
    assert (store.layer_dirs(web)[1] / "var/www/index.html").is_file()


def test_export_import_round_trip(
    registry: Registry, images: TestImages, registry_repo: str, puller: Puller, state_dir: Path
) -> None:
    pushed = registry.push(images.multilayer(), registry_repo, "v1")
    rec = puller.pull(pushed.reference)
    out = state_dir / "export.tar"
    assert cli.main(["--root", str(state_dir / "a"), "ls"]) == 0
    with open(out, "wb") as f:
        archive.export_archive(puller.store, [pushed.reference], f)
    with tarfile.open(out) as tf:
        names = tf.getnames()
        index = json.load(tf.extractfile("index.json"))  # type: ignore[arg-type]
    assert {"oci-layout", "index.json", "manifest.json"} <= set(names)
    assert index["manifests"][0]["annotations"]["io.containerd.image.name"] == pushed.reference
    root = state_dir / "b"
    assert cli.main(["--root", str(root), "import", str(out)]) == 0
    other = ImageStore(root / "images")
    again = other.resolve(pushed.reference)
    assert (again.id, again.repo_tags, again.layers) == (rec.id, rec.repo_tags, rec.layers)
    for a, b in zip(puller.store.layer_dirs(rec), other.layer_dirs(again), strict=True):
        assert tree_of(a) == tree_of(b)
    # The CLI's own export gives the same archive content.
    out2 = state_dir / "cli.tar"
    assert cli.main(["--root", str(root), "export", "-o", str(out2), rec.id]) == 0
    assert out2.stat().st_size > 0 and not Path(str(out2) + ".tmp").exists()
    assert cli.main(["--root", str(root), "rm", rec.id]) == 0
    assert store_files(other) == {"blobs": [], "layers": [], "ingest": []}


def test_import_docker_save(images: TestImages, tmp_path: Path, store: ImageStore) -> None:
    image = images.web(fmt="docker")
    config = image.config.read_bytes()
    buf = tmp_path / "save.tar"
    with tarfile.open(buf, "w") as tf:

        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))

        layer_names = []
        for i, layer in enumerate(image.layers):
            raw = io.BytesIO()
            decompress(layer, raw)
            layer_names.append(f"{i}/layer.tar")
            add(layer_names[-1], raw.getvalue())
        add("config.json", config)
        manifest = [{"Config": "config.json", "RepoTags": ["web:saved"], "Layers": layer_names}]
        add("manifest.json", json.dumps(manifest).encode())
    (rec,) = archive.import_archive(store, buf)
    assert rec.id == image.config_digest
    assert rec.repo_tags == ("docker.io/library/web:saved",)
    assert [lr.diff_id for lr in rec.layers] == image.diff_ids
    assert (store.layer_dirs(rec)[1] / "var/www/index.html").is_file()


def test_import_refuses_a_tampered_blob(
    images: TestImages, tmp_path: Path, store: ImageStore
) -> None:
    layout = images.layout(tmp_path / "layout", {"docker.io/library/t:v1": images.busybox()})
    layer = layout / "blobs/sha256" / images.busybox().layers[0].digest.removeprefix("sha256:")
    data = bytearray(layer.read_bytes())
    data[500] ^= 0xFF
    layer.unlink()
    layer.write_bytes(bytes(data))
    with pytest.raises(BadContent):
        archive.import_archive(store, tar_dir(layout, tmp_path / "l.tar"))
    assert store.images() == [] and store_files(store)["layers"] == []
    assert cli.main(["--root", str(tmp_path / "r"), "import", str(tmp_path / "l.tar")]) == 1
