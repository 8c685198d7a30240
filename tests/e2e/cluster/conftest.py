"""Fixtures for the multi-node scenarios: one cluster (control plane and
three nodes in network namespaces, tests/harness/cluster.py) per module, the
module picking its backend and flags with module-level names:

    BACKEND = "host-gw"          # or "vxlan"
    CP_ARGS = [...]              # extra `skiff controlplane` flags
    NODES = 3

Test images are pushed once per session into the local registry under
docker.io's names (`busybox:1.36`), which every node's runtime mirrors.
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Iterator
from typing import Any

import pytest

from controlplane.client.apiclient import GrpcApiClient
from tests.harness.cluster import Cluster, running_cluster
from tests.harness.images import TestImages
from tests.harness.registry import Registry

BUSYBOX = "busybox:1.36"


@pytest.fixture(scope="session")
def cluster_images(registry: Registry, images: TestImages) -> str:
    registry.push(images.busybox(), repository="library/busybox", tag="1.36")
    return BUSYBOX


@pytest.fixture(scope="module")
def cluster(
    request: pytest.FixtureRequest, registry: Registry, cluster_images: str
) -> Iterator[Cluster]:
    mod = request.module
    with running_cluster(
        registry.host,
        nodes=getattr(mod, "NODES", 3),
        backend=getattr(mod, "BACKEND", "host-gw"),
        cp_args=list(getattr(mod, "CP_ARGS", [])),
        controller_args=list(getattr(mod, "CONTROLLER_ARGS", [])),
        agent_args=tuple(getattr(mod, "AGENT_ARGS", ())),
    ) as c:
        yield c


@pytest.fixture(scope="module")
def api(cluster: Cluster) -> Iterator[GrpcApiClient]:
    with cluster.client() as c:
        yield c


FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed and "cluster" in getattr(item, "funcargs", {}):
        cl: Cluster = item.funcargs["cluster"]  # type: ignore[attr-defined]
        sys.stderr.write(summary(cl) + "\n" + cl.logs(2000) + "\n")


def summary(cl: Cluster) -> str:
    """Nodes and pods as `get -o wide` would show them, for a failure report."""
    lines = []
    try:
        with cl.client() as api:
            for n in api.list("Node").items:
                conds = {c["type"]: c["status"] for c in n["status"].get("conditions") or []}
                taints = [t["key"] for t in n["spec"].get("taints") or []]
                lines.append(
                    f"node {n['metadata']['name']} ready={conds.get('Ready')} {taints} "
                    f"podCIDR={n['spec'].get('podCIDR')}"
                )
            for p in api.list("Pod").items:
                st = p.get("status") or {}
                conds = {c["type"]: c["status"] for c in st.get("conditions") or []}
                lines.append(
                    f"pod {p['metadata']['name']} node={p['spec'].get('nodeName')} "
                    f"phase={st.get('phase')} ready={conds.get('Ready')} ip={st.get('podIP')} "
                    f"deleting={bool(p['metadata'].get('deletionTimestamp'))}"
                )
    except Exception as exc:  # diagnostics only
        lines.append(f"(cluster state not read: {exc})")
    return "\n".join(lines)
