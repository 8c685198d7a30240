"""The runtime with the real ImageService (runtime.image) on the same socket
and on --image-listen: pull from the local registry, then run a container
from the unpacked layers."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from proto.runtime.v1 import api_pb2, api_pb2_grpc
from tests.harness.images import TestImages
from tests.harness.registry import Registry
from tests.harness.wait import wait_for
from tests.linux.runtime.harness import container_config, running_runtime
from tests.linux.runtime.test_containers import started
from tests.linux.runtime.test_lifecycle import exec_sync, run_pod, status

pytestmark = pytest.mark.root


def test_pull_then_run(
    tmp_path: Path, busybox_rootfs: Path, registry: Registry, images: TestImages, registry_repo: str
) -> None:
    registry.push(images.busybox(), registry_repo, "1.0")
    conf = tmp_path / "registries.yaml"
    conf.write_text(
        f"mirrors:\n  example.test:\n    endpoint: [{registry.url}]\ndisable_default_endpoint: true\n"
    )
    ref = f"example.test/{registry_repo}:1.0"
    image_sock = tmp_path / "image.sock"
    with running_runtime(
        tmp_path / "rt", busybox_rootfs, "--registry-config", str(conf),
        "--image-listen", f"unix://{image_sock}", fake_images=False,
    ) as r:  # fmt: skip
        image_id = r.img.PullImage(
            api_pb2.PullImageRequest(image=api_pb2.ImageSpec(image=ref)), timeout=60
        ).image_ref
        with grpc.insecure_channel(f"unix://{image_sock}") as ch:
            listed = api_pb2_grpc.ImageServiceStub(ch).ListImages(
                api_pb2.ListImagesRequest(), timeout=10
            )
            assert [i.id for i in listed.images] == [image_id]
        sid, pcfg = run_pod(r, tmp_path, "pulled")
        cfg = container_config(
            "c", ["sh", "-c", "echo from-the-image; exec sleep 1000"], log_path="c.log"
        )
        cfg.image.image = ref
        cid = started(r, sid, pcfg, cfg)
        st = status(r, cid)
        assert st.image_id == image_id and st.image.image == ref
        assert exec_sync(r, cid, ["echo", "-n", "ok"]).stdout == b"ok"
        log = Path(pcfg.log_directory) / "c.log"
        wait_for(lambda: b"F from-the-image" in log.read_bytes(), message="log line")
        r.rt.RemovePodSandbox(api_pb2.RemovePodSandboxRequest(pod_sandbox_id=sid))
