"""Shared pytest fixtures and markers for the whole suite.

Fixtures here create real things (network namespaces, veth pairs, cgroups,
scratch state directories, a local OCI registry) and always remove them,
even when the test fails. Tests marked `root` are skipped when not root.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import layer_timing, module_cpu, shared_registry
from tests.harness.cgroup import TempCgroup, temp_cgroup
from tests.harness.images import TestImages
from tests.harness.mounts import scratch_dir
from tests.harness.netns import VethPair, temp_netns, temp_veth
from tests.harness.registry import Registry, run_registry

IS_ROOT = os.geteuid() == 0


def pytest_configure(config: pytest.Config) -> None:
    layer_timing.register(config)
    shared_registry.register(config)
    module_cpu.register(config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """--dist loadscope, with the modules of xdist_scopes.SPREAD spread."""
    if config.getvalue("dist") == "loadscope":
        from tests.harness.xdist_scopes import ModuleScheduling

        return ModuleScheduling(config, log)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Hypothesis's caches in the machine's directory where a collected module
    # uses Hypothesis (tests/harness/hypothesis_home.py), without importing it
    # into runs that do not; first, since Hypothesis's own plugin reads the
    # modules' literals in this hook already.
    if "hypothesis" in sys.modules:
        from tests.harness import hypothesis_home

        hypothesis_home.configure()
    if IS_ROOT:
        return
    skip = pytest.mark.skip(reason="needs root")
    for item in items:
        if "root" in item.keywords or "netns" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def netns() -> Iterator[str]:
    """A fresh named network namespace (lo up), deleted afterwards."""
    with temp_netns() as name:
        yield name


@pytest.fixture
def veth_pair(netns: str) -> Iterator[VethPair]:
    """A veth pair with its peer end inside the `netns` fixture's namespace."""
    with temp_veth(peer_netns=netns) as pair:
        yield pair


@pytest.fixture
def cgroup() -> Iterator[TempCgroup]:
    """A temporary cgroup (v2, or one per v1 controller), removed afterwards."""
    with temp_cgroup() as cg:
        yield cg


@pytest.fixture
def state_dir(tmp_path: Path) -> Iterator[Path]:
    """A scratch state directory; every mount below it is undone afterwards."""
    with scratch_dir(tmp_path / "state") as path:
        yield path


@pytest.fixture(scope="session")
def registry(pytestconfig: pytest.Config) -> Iterator[Registry]:
    """One local docker-registry for the whole session (127.0.0.1, free port),
    stopped by pid and removed at the end; in a parallel run, one for all the
    workers (tests/harness/shared_registry.py). Push into `registry_repo` or
    `registry.unique_repository()` so tests never share a repository."""
    shared = shared_registry.from_controller(pytestconfig)
    if shared is not None:
        yield shared
        return
    with run_registry() as reg:
        yield reg


@pytest.fixture
def registry_repo(request: pytest.FixtureRequest, registry: Registry) -> Iterator[str]:
    """A repository name of this test's own; its manifests are deleted after."""
    repo = registry.unique_repository(request.node.name)
    yield repo
    registry.client().delete_repository(repo)


@pytest.fixture(scope="session")
def images() -> Iterator[TestImages]:
    """The session's test-image builder: layers and images are built once and
    cached in a temporary blob store removed at the end of the session."""
    root = Path(tempfile.mkdtemp(prefix="skiff-images-"))
    try:
        yield TestImages(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
