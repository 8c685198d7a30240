"""Fixtures for the agent's end-to-end tests: one `skiff controlplane`
process per module, the session's local registry with the test images pushed
under docker.io and registry.k8s.io names (mirrored there by the runtimes'
configs, never fetched from outside), and a node per runtime kind per module
(tests/e2e/agent/nodepool.py: emptied after each test, replaced after a
failure): `skiff runtime` or a private containerd, plus `skiff agent`, as
real processes in their own temporary directories, cgroups, bridge and pod
CIDR.
"""

from __future__ import annotations

import shutil
from collections.abc import Generator, Iterator
from typing import Any

import pytest

from controlplane.client.apiclient import GrpcApiClient
from tests.e2e.agent.helpers import E2EImages
from tests.e2e.agent.nodepool import NodePool
from tests.harness import containerd as ctrd
from tests.harness.controlplane import ControlPlane
from tests.harness.images import TestImages
from tests.harness.nodeprocs import Node, RuntimeKind, short_tempdir, start_controlplane
from tests.harness.registry import Registry

RUNTIMES: list[RuntimeKind] = ["skiff", "containerd"]


@pytest.fixture(scope="module")
def control_plane() -> Iterator[ControlPlane]:
    base = short_tempdir("ske2e-cp-")
    cp: ControlPlane | None = None
    try:
        cp = start_controlplane(base)
        yield cp
    finally:
        if cp is not None:
            cp.close()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def admin(control_plane: ControlPlane) -> GrpcApiClient:
    return control_plane.client()


@pytest.fixture(scope="session")
def e2e_images(registry: Registry, images: TestImages) -> E2EImages:
    registry.push(images.busybox(), repository="skiff-e2e/busybox", tag="1.36")
    registry.push(images.web(port=80), repository="skiff-e2e/web", tag="1")
    registry.push(ctrd.pause_image(images), repository="pause", tag="3.9")
    return E2EImages(busybox="skiff-e2e/busybox:1.36", web="skiff-e2e/web:1")


# Module-scoped: pytest then runs a module's tests grouped by runtime kind, and
# the node pool starts one node of each kind per module, not one per test.
@pytest.fixture(scope="module", params=RUNTIMES)
def runtime_kind(request: pytest.FixtureRequest) -> RuntimeKind:
    kind: RuntimeKind = request.param
    if kind == "containerd" and not ctrd.available():
        pytest.skip("containerd, runc or /usr/lib/cni/loopback not installed")
    return kind


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.stash[FAILED] = report.failed


FAILED = pytest.StashKey[bool]()


@pytest.fixture(scope="module")
def node_pool(
    control_plane: ControlPlane,
    admin: GrpcApiClient,
    registry: Registry,
    e2e_images: E2EImages,
) -> Iterator[NodePool]:
    pool = NodePool(f"127.0.0.1:{control_plane.port}", control_plane.data_dir, registry.url, admin)
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def node(
    request: pytest.FixtureRequest, node_pool: NodePool, runtime_kind: RuntimeKind
) -> Iterator[Node]:
    n = node_pool.get(runtime_kind)
    try:
        yield n
    finally:
        node_pool.release(runtime_kind, failed=request.node.stash.get(FAILED, True))
