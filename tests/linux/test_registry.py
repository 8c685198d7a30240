"""The local registry fixture and our distribution client: push test images,
pull them back over HTTP and check every digest."""

from __future__ import annotations

import hashlib
import json
import os
import urllib.request

import pytest

from tests.harness.images import (
    LINUX_AMD64,
    Compression,
    Format,
    RegistryClient,
    RegistryError,
    TestImages,
)
from tests.harness.images.content import (
    DOCKER_MANIFEST,
    DOCKER_MANIFEST_LIST,
    OCI_INDEX,
    OCI_MANIFEST,
)
from tests.harness.registry import Registry, run_registry

pytestmark = pytest.mark.root


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def get(registry: Registry, path: str, accept: str = "") -> tuple[int, dict[str, str], bytes]:
    """A plain urllib GET, independent of our client."""
    req = urllib.request.Request(registry.url + path, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()


def test_fixture_answers_on_loopback(registry: Registry) -> None:
    assert registry.host.startswith("127.0.0.1:") and registry.url == f"http://{registry.host}"
    status, _, _ = get(registry, "/v2/")
    assert status == 200
    assert registry.process.poll() is None
    assert registry.unique_repository("x") != registry.unique_repository("x")


@pytest.mark.parametrize(
    ("fmt", "compression", "media_type"),
    [
        ("oci", "gzip", OCI_MANIFEST),
        ("oci", "zstd", OCI_MANIFEST),
        ("oci", "none", OCI_MANIFEST),
        ("docker", "gzip", DOCKER_MANIFEST),
    ],
)
def test_push_then_pull_by_tag_and_digest(
    registry: Registry,
    registry_repo: str,
    images: TestImages,
    fmt: Format,
    compression: Compression,
    media_type: str,
) -> None:
    image = images.busybox(fmt=fmt, compression=compression)
    ref = registry.push(image, registry_repo, "v1")
    assert ref.reference == f"{registry.host}/{registry_repo}:v1"
    assert ref.digest_reference == f"{registry.host}/{registry_repo}@{image.digest}"
    assert (ref.manifest_digest, ref.config_digest) == (image.digest, image.config_digest)
    assert list(ref.layer_digests) == image.layer_digests

    for reference in ("v1", image.digest):
        status, headers, body = get(
            registry, f"/v2/{registry_repo}/manifests/{reference}", accept=media_type
        )
        assert status == 200
        assert headers["content-type"] == media_type
        assert headers["docker-content-digest"] == sha256(body) == image.digest
        assert body == image.manifest.read_bytes()
    manifest = json.loads(body)
    assert manifest["mediaType"] == media_type

    _, _, config = get(registry, f"/v2/{registry_repo}/blobs/{manifest['config']['digest']}")
    assert sha256(config) == image.config_digest
    assert json.loads(config)["rootfs"]["diff_ids"] == image.diff_ids
    for desc in manifest["layers"]:
        _, _, layer = get(registry, f"/v2/{registry_repo}/blobs/{desc['digest']}")
        assert sha256(layer) == desc["digest"] and len(layer) == desc["size"]


def test_second_push_skips_existing_blobs(
    registry: Registry, registry_repo: str, images: TestImages
) -> None:
    client = registry.client()
    image = images.web()
    client.push(registry_repo, image, "a")
    assert [client.push_blob(registry_repo, b) for b in image.blobs()] == [False] * 3
    ref = client.push(registry_repo, image, "b")
    assert ref.digest == image.digest
    assert sorted(client.tags(registry_repo)) == ["a", "b"]


def test_multilayer_image_round_trips(
    registry: Registry, registry_repo: str, images: TestImages
) -> None:
    image = images.multilayer()
    client = registry.client()
    client.push(registry_repo, image)
    manifest = client.get_manifest(registry_repo, "latest").json()
    assert [d["digest"] for d in manifest["layers"]] == image.layer_digests
    assert len(manifest["layers"]) >= 3
    for digest in image.layer_digests:
        assert sha256(client.get_blob(registry_repo, digest)) == digest


@pytest.mark.parametrize(
    ("fmt", "index_type", "child_type"),
    [("oci", OCI_INDEX, OCI_MANIFEST), ("docker", DOCKER_MANIFEST_LIST, DOCKER_MANIFEST)],
)
def test_index_push_and_platform_pick(
    registry: Registry,
    registry_repo: str,
    images: TestImages,
    fmt: Format,
    index_type: str,
    child_type: str,
) -> None:
    index = images.multiarch(fmt=fmt)
    ref = registry.push(index, registry_repo, "multi")
    assert ref.digest == index.digest and len(ref.children) == 2

    accept = ", ".join([index_type, child_type])
    status, headers, body = get(registry, f"/v2/{registry_repo}/manifests/multi", accept=accept)
    assert headers["content-type"] == index_type
    assert headers["docker-content-digest"] == sha256(body) == index.digest
    doc = json.loads(body)
    [amd64] = [m for m in doc["manifests"] if m["platform"] == LINUX_AMD64.to_json()]
    assert amd64["mediaType"] == child_type

    status, headers, child = get(
        registry, f"/v2/{registry_repo}/manifests/{amd64['digest']}", accept=child_type
    )
    assert status == 200 and sha256(child) == amd64["digest"]
    assert amd64["digest"] == index.image_for("linux/amd64").digest
    config_digest = json.loads(child)["config"]["digest"]
    _, _, config = get(registry, f"/v2/{registry_repo}/blobs/{config_digest}")
    assert json.loads(config)["architecture"] == "amd64"

    resolved = registry.client().resolve(registry_repo, "multi", "linux/arm64/v8")
    assert sha256(resolved.body) == index.image_for("linux/arm64/v8").digest


def test_sized_image_round_trips(
    registry: Registry, registry_repo: str, images: TestImages
) -> None:
    image = images.sized(total_bytes=8 << 20, layers=4)
    client = registry.client()
    ref = client.push(registry_repo, image)
    for digest in ref.layer_digests:
        assert sha256(client.get_blob(registry_repo, digest)) == digest


def test_client_checks_digests(registry: Registry, registry_repo: str, images: TestImages) -> None:
    client = registry.client()
    image = images.busybox()
    client.push(registry_repo, image)
    wrong = images.web().digest
    with pytest.raises(RegistryError) as err:
        client.get_manifest(registry_repo, wrong)
    assert err.value.status == 404
    assert client.get_manifest(registry_repo, image.digest).body == image.manifest.read_bytes()


def test_delete_repository_removes_manifests(registry: Registry, images: TestImages) -> None:
    client = registry.client()
    repo = registry.unique_repository("delete")
    client.push(repo, images.multiarch(), "x")
    client.push(repo, images.busybox(), "y")
    client.delete_repository(repo)
    for reference in ["x", "y", images.multiarch().image_for("linux/amd64").digest]:
        with pytest.raises(RegistryError) as err:
            client.get_manifest(repo, reference)
        assert err.value.status == 404


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_run_registry_stops_by_pid_and_removes_files_on_failure() -> None:
    with pytest.raises(RuntimeError, match="boom"), run_registry() as reg:
        pid, root = reg.pid, reg.root
        assert RegistryClient(reg.host).ping()
        assert reg.storage.is_dir()
        raise RuntimeError("boom")
    assert not pid_alive(pid) and not root.exists()
