"""The CRI ImageService over a real gRPC server on a unix socket: the image
behaviour critest checks (names, identical status, users, tags, removal)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from proto.runtime.v1 import api_pb2, api_pb2_grpc
from runtime.image import build
from tests.harness.images import TestImages
from tests.harness.registry import Registry

pytestmark = pytest.mark.root


@pytest.fixture
def cri(state_dir: Path, registry: Registry) -> Iterator[api_pb2_grpc.ImageServiceStub]:
    registries = state_dir / "registries.yaml"
    registries.write_text(
        f"mirrors:\n  registry.k8s.io:\n    endpoint: [{registry.url}]\n"
        "disable_default_endpoint: true\n"
    )
    _store, servicer = build(state_dir / "images", registries, False)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    api_pb2_grpc.add_ImageServiceServicer_to_server(servicer, server)
    sock = state_dir / "cri.sock"
    server.add_insecure_port(f"unix://{sock}")
    server.start()
    channel = grpc.insecure_channel(f"unix://{sock}")
    try:
        yield api_pb2_grpc.ImageServiceStub(channel)
    finally:
        channel.close()
        server.stop(None).wait(10)


def spec(ref: str) -> api_pb2.ImageSpec:
    return api_pb2.ImageSpec(image=ref)


def pull(cri: api_pb2_grpc.ImageServiceStub, ref: str) -> str:
    resp: api_pb2.PullImageResponse = cri.PullImage(
        api_pb2.PullImageRequest(image=spec(ref)), timeout=60
    )
    return resp.image_ref


def status(
    cri: api_pb2_grpc.ImageServiceStub, ref: str, verbose: bool = False
) -> api_pb2.ImageStatusResponse:
    resp: api_pb2.ImageStatusResponse = cri.ImageStatus(
        api_pb2.ImageStatusRequest(image=spec(ref), verbose=verbose), timeout=10
    )
    return resp


def test_pull_status_list_remove(
    cri: api_pb2_grpc.ImageServiceStub, registry: Registry, images: TestImages, registry_repo: str
) -> None:
    pushed = registry.push(images.busybox(), registry_repo, "1.29-2")
    ref = f"registry.k8s.io/{registry_repo}:1.29-2"
    image_id = pull(cri, ref)
    assert image_id == pushed.config_digest
    by_digest = f"registry.k8s.io/{registry_repo}@{pushed.digest}"
    got = [status(cri, r).image for r in (image_id, ref, by_digest)]
    assert got[0] == got[1] == got[2]
    assert list(got[0].repo_tags) == [ref] and list(got[0].repo_digests) == [by_digest]
    verbose = status(cri, ref, verbose=True)
    info = json.loads(verbose.info["info"])
    assert info["imageSpec"]["config"]["Cmd"] == ["sh"]
    listed = cri.ListImages(api_pb2.ListImagesRequest(), timeout=10).images
    assert [i.id for i in listed] == [image_id]
    flt = api_pb2.ImageFilter(image=spec(ref))
    assert len(cri.ListImages(api_pb2.ListImagesRequest(filter=flt), timeout=10).images) == 1
    flt = api_pb2.ImageFilter(image=spec("registry.k8s.io/nope:1"))
    assert len(cri.ListImages(api_pb2.ListImagesRequest(filter=flt), timeout=10).images) == 0
    streamed = [
        i.id for r in cri.StreamImages(api_pb2.StreamImagesRequest(), timeout=10) for i in r.images
    ]
    assert streamed == [image_id]
    fs = cri.ImageFsInfo(api_pb2.ImageFsInfoRequest(), timeout=10).image_filesystems[0]
    assert fs.used_bytes.value > 1_000_000 and fs.inodes_used.value > 3
    cri.RemoveImage(api_pb2.RemoveImageRequest(image=spec(by_digest)), timeout=10)
    assert not status(cri, image_id).HasField("image")
    cri.RemoveImage(api_pb2.RemoveImageRequest(image=spec(image_id)), timeout=10)  # idempotent


def test_pull_without_tag_and_by_digest(
    cri: api_pb2_grpc.ImageServiceStub, registry: Registry, images: TestImages, registry_repo: str
) -> None:
    pushed = registry.push(images.web(), registry_repo, "latest")
    by_digest = f"registry.k8s.io/{registry_repo}@{pushed.digest}"
    image_id = pull(cri, by_digest)
    img = status(cri, image_id).image
    assert list(img.repo_tags) == [] and list(img.repo_digests) == [by_digest]
    pull(cri, f"registry.k8s.io/{registry_repo}")
    img = status(cri, image_id).image
    assert list(img.repo_tags) == [f"registry.k8s.io/{registry_repo}:latest"]


def test_one_image_under_three_tags_then_remove_by_id(
    cri: api_pb2_grpc.ImageServiceStub, registry: Registry, images: TestImages, registry_repo: str
) -> None:
    for tag in ("1", "2", "3"):
        registry.push(images.busybox(), registry_repo, tag)
    ids = {pull(cri, f"registry.k8s.io/{registry_repo}:{t}") for t in ("1", "2", "3")}
    assert len(ids) == 1
    (listed,) = cri.ListImages(api_pb2.ListImagesRequest(), timeout=10).images
    assert sorted(listed.repo_tags) == [f"registry.k8s.io/{registry_repo}:{t}" for t in "123"]
    cri.RemoveImage(api_pb2.RemoveImageRequest(image=spec(listed.id)), timeout=10)
    assert list(cri.ListImages(api_pb2.ListImagesRequest(), timeout=10).images) == []
    for t in "123":
        assert not status(cri, f"registry.k8s.io/{registry_repo}:{t}").HasField("image")


@pytest.mark.parametrize(
    ("user", "uid", "username"),
    [
        ("1002", 1002, ""),
        ("www-data", None, "www-data"),
        ("1003:1004", 1003, ""),
        ("www-data:1004", None, "www-data"),
    ],
)
def test_uid_and_username_from_config(
    cri: api_pb2_grpc.ImageServiceStub,
    registry: Registry,
    images: TestImages,
    registry_repo: str,
    user: str,
    uid: int | None,
    username: str,
) -> None:
    pushed = registry.push(images.user(user), registry_repo, "v1")
    img = status(cri, pull(cri, f"registry.k8s.io/{registry_repo}:v1")).image
    assert img.id == pushed.config_digest
    assert img.HasField("uid") == (uid is not None)
    if uid is not None:
        assert img.uid.value == uid
    assert img.username == username


def test_error_codes(cri: api_pb2_grpc.ImageServiceStub, registry_repo: str) -> None:
    with pytest.raises(grpc.RpcError) as exc:
        pull(cri, "Bad:Ref:")
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "Bad:Ref:" in (exc.value.details() or "")
    with pytest.raises(grpc.RpcError) as exc:
        pull(cri, f"registry.k8s.io/{registry_repo}:missing")
    assert exc.value.code() == grpc.StatusCode.NOT_FOUND
    assert "MANIFEST_UNKNOWN" in (exc.value.details() or "") or "NAME_UNKNOWN" in (
        exc.value.details() or ""
    )
    with pytest.raises(grpc.RpcError) as exc:
        pull(cri, "")
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
