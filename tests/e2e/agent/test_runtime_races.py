"""CRI behaviour the agent relies on under its own concurrency: it relists
sandboxes (ListPodSandbox) while pod workers create others. A sandbox must
be READY when RunPodSandbox returns, whatever else is listing meanwhile.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from proto.runtime.v1 import api_pb2 as cri
from tests.e2e.agent.helpers import E2EImages
from tests.harness.nodeprocs import Node, NodeSpec, RuntimeKind, short_tempdir
from tests.harness.registry import Registry

pytestmark = [pytest.mark.root, pytest.mark.e2e]


@pytest.fixture
def runtime_node(
    runtime_kind: RuntimeKind, registry: Registry, e2e_images: E2EImages
) -> Iterator[Node]:
    node = Node(
        spec=NodeSpec.unique("race"),
        base=short_tempdir("ske2e-"),
        server="",
        cp_data_dir=Path("/nonexistent"),
        runtime_kind=runtime_kind,
        registry_url=registry.url,
    )
    try:
        yield node.start_runtime_only()
    finally:
        node.cleanup()


def _sandbox_config(node: Node, i: int) -> cri.PodSandboxConfig:
    uid = uuid.uuid4().hex
    return cri.PodSandboxConfig(
        metadata=cri.PodSandboxMetadata(name=f"race-{i}", uid=uid, namespace="default"),
        hostname=f"race-{i}",
        log_directory=str(node.base / "pods" / uid),
        linux=cri.LinuxPodSandboxConfig(cgroup_parent=f"{node.pod_cgroup_root}/pod{uid}"),
    )


def _ready_after_run_while_listing(node: Node, count: int) -> list[str]:
    client = node.cri()
    stop = threading.Event()
    not_ready: list[str] = []

    def lister() -> None:
        while not stop.is_set():
            client.list_pod_sandboxes()

    def one(i: int) -> None:
        sid = client.run_pod_sandbox(_sandbox_config(node, i))
        if client.pod_sandbox_status(sid).status.state != cri.SANDBOX_READY:
            not_ready.append(sid)

    listing = threading.Thread(target=lister)
    listing.start()
    try:
        workers = [threading.Thread(target=one, args=(i,)) for i in range(count)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
    finally:
        stop.set()
        listing.join()
        client.close()
    return not_ready


@pytest.mark.parametrize(
    "runtime_kind",
    [
        "skiff",
        "containerd",
    ],
    indirect=True,
)
def test_new_sandbox_ready_while_another_client_lists(runtime_node: Node) -> None:
    assert _ready_after_run_while_listing(runtime_node, 6) == []
