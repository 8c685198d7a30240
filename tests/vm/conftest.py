"""Fixtures for tests/vm: one VM cluster (control plane + two node VMs,
tests/vm/vmcluster.py) for the session, the busybox test image in the
session's local registry (which the VMs reach through a relay), and the
phase times printed at the end."""

from __future__ import annotations

import sys
import time
from collections.abc import Generator, Iterator
from typing import Any

import pytest

from controlplane.client.apiclient import GrpcApiClient
from tests.harness.images import TestImages
from tests.harness.registry import Registry
from tests.vm import vmcluster
from tests.vm.vmcluster import PHASES, VmCluster, VmError, vm_cluster


def pytest_configure(config: pytest.Config) -> None:
    capman = config.pluginmanager.getplugin("capturemanager")

    def uncaptured(line: str) -> None:
        with capman.global_and_fixture_disabled():
            sys.stderr.write(line)
            sys.stderr.flush()

    if capman is not None:
        vmcluster.WRITE[0] = uncaptured


@pytest.fixture(scope="session")
def vm(registry: Registry, images: TestImages) -> Iterator[VmCluster]:
    registry.push(images.busybox(), repository="library/busybox", tag="1.36")
    try:
        with vm_cluster(nodes=2, registry_port=registry.port) as cluster:
            yield cluster
    except VmError as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(scope="session")
def api(vm: VmCluster) -> Iterator[GrpcApiClient]:
    with vm.client() as c:
        yield c


@pytest.fixture(autouse=True)
def _scenario_time(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    # (the call only: setup time of the session fixture is its own phases)
    report = getattr(request.node, "_vm_call_seconds", None)
    if report is not None:
        PHASES.append((f"scenario {request.node.name}", report))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    started = time.monotonic()
    yield
    item._vm_call_seconds = time.monotonic() - started  # type: ignore[attr-defined]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed and "vm" in getattr(item, "funcargs", {}):
        cluster: VmCluster = item.funcargs["vm"]  # type: ignore[attr-defined]
        report.sections.append(("VM cluster journals", cluster.logs(150)))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not PHASES:
        return
    terminalreporter.section("VM cluster phases")
    for name, seconds in PHASES:
        terminalreporter.write_line(f"{name:<60} {seconds:8.1f} s")
