"""Container GC through CRI (issue 20): a crash-looping container keeps one
dead container, the others go with their logs; a runtime that fails
ListContainers is reported, not fatal. Against the in-memory runtime."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from agent.container_gc import ContainerGCPolicy
from agent.cri_client import CRIClient
from agent.node_resources import NodeResources, ResourceSettings
from proto.runtime.v1 import api_pb2 as cri
from tests.fakes.fake_runtime import FakeRuntime, serve_fake_runtime


class NoPods:
    def admitted_pods(self) -> list[Any]:
        return []


@pytest.fixture
def rt() -> Iterator[tuple[FakeRuntime, CRIClient, Path]]:
    d = Path(tempfile.mkdtemp(prefix="skgc", dir="/tmp"))
    try:
        with serve_fake_runtime(d / "cri.sock") as fake:
            client = CRIClient(f"unix://{d}/cri.sock", timeout=5)
            try:
                yield fake, client, d
            finally:
                client.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_crash_looping_container_keeps_one_dead_container(
    rt: tuple[FakeRuntime, CRIClient, Path],
) -> None:
    fake, client, d = rt
    fake.images["busybox:1"] = "sha256:bb"
    logs = d / "pods" / "default_crash_uid-1"
    sb_cfg = cri.PodSandboxConfig(
        metadata=cri.PodSandboxMetadata(name="crash", namespace="default", uid="uid-1"),
        labels={"io.kubernetes.pod.uid": "uid-1"},
        log_directory=str(logs),
    )
    sandbox = client.run_pod_sandbox(sb_cfg)
    ids = []
    for attempt in range(4):
        cfg = cri.ContainerConfig(
            metadata=cri.ContainerMetadata(name="app", attempt=attempt),
            image=cri.ImageSpec(image="busybox:1"),
            labels={"io.kubernetes.pod.uid": "uid-1", "io.kubernetes.container.name": "app"},
            log_path=f"app/{attempt}.log",
        )
        cid = client.create_container(sandbox, cfg, sb_cfg)
        client.start_container(cid)
        (logs / "app").mkdir(parents=True, exist_ok=True)
        (logs / "app" / f"{attempt}.log").write_text("crashed\n")
        if attempt < 3:
            fake.exit_container(cid, 1)
        ids.append(cid)
    res = NodeResources(
        ResourceSettings(container_gc=ContainerGCPolicy()),
        client,
        NoPods(),  # type: ignore[arg-type]
        str(d),
        "/skiff-test-none/pods",
        str(d / "pods"),
        lambda: 0,
    )
    assert res.container_gc() == 2
    assert set(fake.containers) == {ids[2], ids[3]}  # the newest dead one and the running one
    assert sorted(p.name for p in (logs / "app").iterdir()) == ["2.log", "3.log"]
    assert res.container_gc() == 0

    fake.fail_next["ListContainers"] = (grpc.StatusCode.UNAVAILABLE, "busy")
    assert res.container_gc() == 0
    assert "ListContainersFailed" in res.problems
    res.container_gc()
    assert "ListContainersFailed" not in res.problems
