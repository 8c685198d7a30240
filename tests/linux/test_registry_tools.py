"""Our images and pushes as other OCI tools see them: umoci unpacks our
layout (applying whiteouts, keeping hard links), skopeo copies our layout
into the registry fixture and reads back what our client pushed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness.images import TestImages
from tests.harness.images.content import OCI_INDEX, sha256_digest
from tests.harness.registry import Registry

pytestmark = pytest.mark.root


def need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} not installed")
    return path


def run(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120).stdout


@pytest.mark.slow
def test_umoci_unpacks_multilayer_with_whiteouts(images: TestImages, tmp_path: Path) -> None:
    umoci = need("umoci")
    layout = images.layout(tmp_path / "layout", {"multilayer": images.multilayer()})
    bundle = tmp_path / "bundle"
    run(umoci, "unpack", "--image", f"{layout}:multilayer", str(bundle))
    rootfs = bundle / "rootfs"
    assert (rootfs / "data/keep.txt").read_text() == "kept from layer 2\n"
    assert (rootfs / "data/overwrite.txt").read_text() == "version 3\n"
    assert not (rootfs / "data/remove-me.txt").exists()
    assert sorted(p.name for p in (rootfs / "data/dir").iterdir()) == ["c.txt"]
    assert not (rootfs / "bin/vi").exists()
    assert (rootfs / "bin/sh").stat().st_ino == (rootfs / "bin/busybox").stat().st_ino
    assert (rootfs / "bin/busybox").stat().st_nlink > 100
    assert not list(rootfs.rglob(".wh.*"))
    config = json.loads((bundle / "config.json").read_text())
    assert config["process"]["cwd"] == "/data"


def test_skopeo_copies_our_layout_into_the_registry(
    registry: Registry, registry_repo: str, images: TestImages, tmp_path: Path
) -> None:
    skopeo = need("skopeo")
    index = images.multiarch()
    layout = images.layout(tmp_path / "layout", {"multi": index})
    dest = f"docker://{registry.host}/{registry_repo}:multi"
    run(
        skopeo,
        "copy",
        "-q",
        "--all",
        "--insecure-policy",
        "--preserve-digests",
        "--dest-tls-verify=false",
        f"oci:{layout}:multi",
        dest,
    )
    resp = registry.client().get_manifest(registry_repo, "multi")
    assert resp.headers["content-type"] == OCI_INDEX
    assert sha256_digest(resp.body) == index.digest
    child = registry.client().resolve(registry_repo, "multi", "linux/amd64")
    assert sha256_digest(child.body) == index.image_for("linux/amd64").digest


def test_skopeo_reads_what_our_client_pushed(
    registry: Registry, registry_repo: str, images: TestImages
) -> None:
    skopeo = need("skopeo")
    image = images.web(fmt="docker")
    ref = registry.push(image, registry_repo, "web")
    raw = run(skopeo, "inspect", "--raw", "--tls-verify=false", f"docker://{ref.reference}")
    assert raw.encode() == image.manifest.read_bytes()
    info = json.loads(
        run(skopeo, "inspect", "--tls-verify=false", f"docker://{ref.digest_reference}")
    )
    assert info["Digest"] == image.digest
    assert info["Layers"] == image.layer_digests
    assert info["Architecture"] == "amd64" and info["Os"] == "linux"
    config = json.loads(
        run(skopeo, "inspect", "--config", "--tls-verify=false", f"docker://{ref.reference}")
    )
    assert config["config"]["ExposedPorts"] == {"80/tcp": {}}
