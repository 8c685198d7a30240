"""The test-image builder: deterministic digests, hard links, whiteouts, safe
tar entries, and well-formed configs, manifests, indexes and layouts."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest

from tests.harness.images import (
    EPOCH,
    LINUX_AMD64,
    LINUX_ARM64,
    Compression,
    Format,
    Image,
    ImageConfig,
    Index,
    TestImages,
    Tree,
    build_image,
    build_layer,
    write_layout,
)
from tests.harness.images.busybox import BUSYBOX, applets
from tests.harness.images.content import (
    DOCKER_CONFIG,
    DOCKER_LAYER_GZIP,
    DOCKER_MANIFEST,
    DOCKER_MANIFEST_LIST,
    OCI_CONFIG,
    OCI_INDEX,
    OCI_LAYER,
    OCI_LAYER_GZIP,
    OCI_LAYER_ZSTD,
    OCI_MANIFEST,
    file_digest,
    sha256_digest,
)
from tests.harness.images.layers import Layer, decompress
from tests.harness.images.layout import REF_NAME

pytestmark = pytest.mark.skipif(not BUSYBOX.exists(), reason="needs busybox-static")


def members(layer: Layer) -> list[tarfile.TarInfo]:
    buf = io.BytesIO()
    decompress(layer, buf)
    buf.seek(0)
    with tarfile.open(fileobj=buf) as tar:
        return tar.getmembers()


def tar_bytes(layer: Layer) -> bytes:
    buf = io.BytesIO()
    decompress(layer, buf)
    return buf.getvalue()


def read_files(layer: Layer, *names: str) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(tar_bytes(layer))) as tar:
        out = []
        for name in names:
            f = tar.extractfile(name)
            assert f is not None, name
            out.append(f.read().decode())
        return out


def every_image(images: TestImages) -> dict[str, Image | Index]:
    return {
        "busybox": images.busybox(),
        "busybox-zstd": images.busybox(compression="zstd"),
        "busybox-none": images.busybox(compression="none"),
        "busybox-docker": images.busybox(fmt="docker"),
        "web": images.web(),
        "user": images.user(),
        "user-named": images.user("www-data"),
        "multilayer": images.multilayer(),
        "multiarch": images.multiarch(),
        "multiarch-docker": images.multiarch(fmt="docker"),
        "sized": images.sized(total_bytes=2 << 20, layers=3),
    }


def test_digests_are_reproducible_across_builds(images: TestImages, tmp_path: Path) -> None:
    first = every_image(images)
    second = every_image(TestImages(tmp_path / "again"))
    assert {k: v.digest for k, v in first.items()} == {k: v.digest for k, v in second.items()}
    assert len({v.digest for v in first.values()}) == len(first)


def test_blobs_hash_to_their_digests(images: TestImages) -> None:
    for item in every_image(images).values():
        for image in item.images if isinstance(item, Index) else [item]:
            for blob in [image.manifest, image.config, *image.layer_blobs]:
                assert file_digest(blob.path) == blob.digest
                assert blob.path.stat().st_size == blob.size
            config = json.loads(image.config.read_bytes())
            assert config["rootfs"]["diff_ids"] == image.diff_ids
            for layer in image.layers:
                assert sha256_digest(tar_bytes(layer)) == layer.diff_id


def test_busybox_applets_are_hard_links(images: TestImages) -> None:
    [layer] = images.busybox().layers
    by_name = {m.name: m for m in members(layer)}
    regular = [m for m in by_name.values() if m.isreg() and m.size == BUSYBOX.stat().st_size]
    assert len(regular) == 1, "busybox is stored once"
    target = regular[0].name
    for path in [*applets(), "bin/busybox"]:
        m = by_name[path]
        assert m.name == target or (m.islnk() and m.linkname == target), path
    assert by_name["bin/sh"].islnk() and by_name["bin/ls"].islnk()
    assert not any(m.issym() for m in by_name.values())


def test_busybox_rootfs_has_users_and_dirs(images: TestImages) -> None:
    [layer] = images.busybox().layers
    by_name = {m.name: m for m in members(layer)}
    assert by_name["tmp"].mode == 0o1777 and by_name["root"].mode == 0o700
    assert (by_name["home/default-user"].uid, by_name["home/default-user"].gid) == (1000, 1000)
    passwd, group = read_files(layer, "etc/passwd", "etc/group")
    users = {line.split(":")[0]: line.split(":")[2] for line in passwd.splitlines()}
    assert {"root": "0", "www-data": "33", "nobody": "65534", "default-user": "1000"}.items() <= (
        users.items()
    )
    assert "nogroup:x:65534:" in group and "www-data:x:33:" in group


def test_headers_are_pinned(images: TestImages) -> None:
    for layer in [*images.multilayer().layers, *images.web().layers]:
        for m in members(layer):
            assert m.mtime == EPOCH and m.uname == "" and m.gname == ""
            if m.name != "home/default-user":
                assert (m.uid, m.gid) == (0, 0), m.name


def test_gzip_header_has_no_time_or_name(images: TestImages) -> None:
    head = images.busybox().layers[0].blob.read_bytes()[:10]
    assert head[:3] == b"\x1f\x8b\x08"
    assert head[3] == 0, "no FNAME"
    assert head[4:8] == b"\0\0\0\0", "mtime 0"


def test_tar_entries_never_escape_the_root(images: TestImages) -> None:
    for item in every_image(images).values():
        for image in item.images if isinstance(item, Index) else [item]:
            for layer in image.layers:
                for m in members(layer):
                    for name in [m.name, m.linkname if m.islnk() else ""]:
                        assert not name.startswith("/"), name
                        assert ".." not in name.split("/"), name


def test_tree_refuses_paths_outside_the_root() -> None:
    for bad in ["../etc/passwd", "a/../../b", "/", "", "a/\0b"]:
        with pytest.raises(ValueError):
            Tree().file(bad, b"x")
    with pytest.raises(ValueError):
        Tree().hardlink("bin/x", "../bin/busybox")
    assert Tree().file("/usr//bin/./x", b"").entries()[-1].path == "usr/bin/x"


def test_tree_refuses_broken_links_and_files_as_parents() -> None:
    with pytest.raises(ValueError, match="not in this layer"):
        Tree().hardlink("a", "b").entries()
    with pytest.raises(ValueError, match="not a directory"):
        Tree().file("a", b"").file("a/b", b"").entries()


def test_tree_orders_parents_first_and_links_after_targets() -> None:
    tree = Tree().file("z/file", b"data", 0o600).hardlink("a/link", "z/file").dir("a-b")
    entries = tree.entries()
    assert [e.path for e in entries] == ["a", "a/link", "a-b", "z", "z/file"]
    # the first name in tar order carries the data; the other one links to it
    assert entries[1].kind.value == "file" and entries[1].mode == 0o600
    assert entries[4].kind.value == "hardlink" and entries[4].link == "a/link"


def test_multilayer_whiteouts(images: TestImages) -> None:
    base, lower, upper = images.multilayer().layers
    assert base == images.busybox_layer()
    lower_names = [m.name for m in members(lower)]
    assert "data/remove-me.txt" in lower_names and "data/dir/a.txt" in lower_names
    upper_members = members(upper)
    names = [m.name for m in upper_members]
    assert "data/.wh.remove-me.txt" in names
    assert "bin/.wh.vi" in names
    assert names.index("data/dir/.wh..wh..opq") < names.index("data/dir/c.txt")
    for m in upper_members:
        if "/.wh." in "/" + m.name:
            assert m.isreg() and m.size == 0


def test_config_fields(images: TestImages) -> None:
    config = ImageConfig(
        entrypoint=["/bin/sh", "-c"],
        cmd=["echo hi"],
        env=["A=1", "PATH=/bin"],
        working_dir="/work",
        user="1000:1000",
        exposed_ports=["8080/tcp", "53/udp"],
        volumes=["/data"],
        stop_signal="SIGINT",
        labels={"b": "2", "a": "1"},
    )
    image = images.custom("custom", [Tree().dir("work")], config)
    doc = json.loads(image.config.read_bytes())
    assert doc["architecture"] == "amd64" and doc["os"] == "linux"
    assert doc["created"] == "2020-01-01T00:00:00Z"
    assert doc["config"] == {
        "User": "1000:1000",
        "ExposedPorts": {"53/udp": {}, "8080/tcp": {}},
        "Env": ["A=1", "PATH=/bin"],
        "Entrypoint": ["/bin/sh", "-c"],
        "Cmd": ["echo hi"],
        "Volumes": {"/data": {}},
        "WorkingDir": "/work",
        "Labels": {"a": "1", "b": "2"},
        "StopSignal": "SIGINT",
    }
    assert len(doc["history"]) == len(image.layers) == 2
    web = json.loads(images.web().config.read_bytes())["config"]
    assert web["Cmd"][:4] == ["httpd", "-f", "-p", "80"] and web["ExposedPorts"] == {"80/tcp": {}}
    assert json.loads(images.user("www-data").config.read_bytes())["config"]["User"] == "www-data"


@pytest.mark.parametrize(
    ("fmt", "compression", "manifest_type", "config_type", "layer_type"),
    [
        ("oci", "gzip", OCI_MANIFEST, OCI_CONFIG, OCI_LAYER_GZIP),
        ("oci", "zstd", OCI_MANIFEST, OCI_CONFIG, OCI_LAYER_ZSTD),
        ("oci", "none", OCI_MANIFEST, OCI_CONFIG, OCI_LAYER),
        ("docker", "gzip", DOCKER_MANIFEST, DOCKER_CONFIG, DOCKER_LAYER_GZIP),
    ],
)
def test_manifest_media_types(
    images: TestImages,
    fmt: Format,
    compression: Compression,
    manifest_type: str,
    config_type: str,
    layer_type: str,
) -> None:
    image = images.busybox(fmt=fmt, compression=compression)
    doc = json.loads(image.manifest.read_bytes())
    assert doc["schemaVersion"] == 2 and doc["mediaType"] == manifest_type
    assert doc["config"] == {
        "mediaType": config_type,
        "digest": image.config_digest,
        "size": image.config.size,
    }
    assert [d["mediaType"] for d in doc["layers"]] == [layer_type]
    assert [d["digest"] for d in doc["layers"]] == image.layer_digests


def test_docker_format_has_no_zstd(images: TestImages) -> None:
    layer = build_layer(images.store, Tree().file("x", b"x"), "zstd")
    with pytest.raises(ValueError, match="no docker media type"):
        build_image(images.store, [layer], fmt="docker")


def test_zstd_and_gzip_layers_share_the_diff_id(images: TestImages) -> None:
    ids = {images.busybox_layer(c).diff_id for c in ("gzip", "zstd", "none")}
    assert len(ids) == 1
    assert (
        gzip.decompress(images.busybox_layer().blob.read_bytes())[:100]
        == tar_bytes(images.busybox_layer("none"))[:100]
    )


@pytest.mark.parametrize(
    ("fmt", "index_type"), [("oci", OCI_INDEX), ("docker", DOCKER_MANIFEST_LIST)]
)
def test_index_lists_platforms(images: TestImages, fmt: Format, index_type: str) -> None:
    index = images.multiarch(fmt=fmt)
    doc = json.loads(index.manifest.read_bytes())
    assert doc["mediaType"] == index_type
    assert [m["platform"] for m in doc["manifests"]] == [
        {"architecture": "amd64", "os": "linux"},
        {"architecture": "arm64", "os": "linux", "variant": "v8"},
    ]
    assert index.image_for("linux/amd64").platform == LINUX_AMD64
    assert index.image_for(LINUX_ARM64).digest == doc["manifests"][1]["digest"]
    arm = json.loads(index.image_for(LINUX_ARM64).config.read_bytes())
    assert (arm["architecture"], arm["variant"]) == ("arm64", "v8")
    with pytest.raises(KeyError):
        index.image_for("linux/s390x")


def test_sized_image(images: TestImages) -> None:
    image = images.sized(total_bytes=4 << 20, layers=4)
    assert len(image.layers) == 4
    sizes = [layer.size for layer in image.layers]
    assert all(s >= 1 << 20 for s in sizes), "random data does not compress"
    assert len(set(image.layer_digests)) == 4


def test_layout(images: TestImages, tmp_path: Path) -> None:
    items: dict[str, Image | Index] = {
        "busybox": images.busybox(),
        "multiarch": images.multiarch(),
    }
    dest = write_layout(tmp_path / "layout", items)
    write_layout(dest, [images.multilayer()])  # adds to the existing index.json
    assert json.loads((dest / "oci-layout").read_text()) == {"imageLayoutVersion": "1.0.0"}
    index = json.loads((dest / "index.json").read_text())
    assert index["mediaType"] == OCI_INDEX
    refs = {m["annotations"][REF_NAME]: m for m in index["manifests"]}
    assert set(refs) == {"busybox", "multiarch", "multilayer-latest"}
    assert refs["multiarch"]["mediaType"] == OCI_INDEX
    assert refs["busybox"]["digest"] == images.busybox().digest
    blobs = list((dest / "blobs" / "sha256").iterdir())
    for blob in blobs:
        assert file_digest(blob) == "sha256:" + blob.name
    arm = images.multiarch().image_for(LINUX_ARM64)
    assert {p.name for p in blobs} >= {d.split(":")[1] for d in [arm.digest, arm.config_digest]}
