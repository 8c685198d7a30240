"""Fixtures for the CNI tests: throwaway "node" namespaces (where the plugin
runs, as a runtime would run it), pod namespaces, and the plugin installed
as fast launchers. Deleting a node namespace removes everything the plugin
made there (bridge, veths, routes, iptables rules)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.cni import install
from tests.harness.netns import temp_netns


@pytest.fixture(scope="session")
def cni_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bin dir with skiff-cni and skiff-ipam as launchers."""
    d = tmp_path_factory.mktemp("cni-bin")
    install.install(str(d))
    return d


@pytest.fixture
def node() -> Iterator[str]:
    """A "node" network namespace (lo up) to run plugins in."""
    with temp_netns("skcni-node-") as name:
        yield name


@pytest.fixture
def pod_factory() -> Iterator[Any]:
    """Make pod namespaces on demand; all removed afterwards."""
    stack: list[Any] = []

    def make() -> str:
        cm = temp_netns("skcni-pod-")
        name = cm.__enter__()
        stack.append(cm)
        return name

    try:
        yield make
    finally:
        for cm in reversed(stack):
            cm.__exit__(None, None, None)
