"""Waiting for hollow nodes (agent/hollow.py) to take pods.

A Node is created with the not-ready taint, which node lifecycle lifts once
the node reports Ready; until then nothing binds to it. A fixture that waits
only for the Nodes to exist hands its tests a cluster that cannot schedule
yet, and under load a test's own deadline is spent waiting for it.
"""

from __future__ import annotations

from controlplane.client.apiclient import GrpcApiClient
from tests.harness.wait import wait_for

LIFECYCLE_TAINTS = {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}


def schedulable(api: GrpcApiClient) -> int:
    """How many Nodes carry no node-lifecycle taint."""
    return sum(
        1
        for n in api.list("Node").items
        if not any(
            t.get("key") in LIFECYCLE_TAINTS for t in (n.get("spec") or {}).get("taints") or []
        )
    )


def wait_schedulable(api: GrpcApiClient, count: int, timeout: float = 60) -> None:
    """Until `count` Nodes exist without a node-lifecycle taint."""
    wait_for(
        lambda: schedulable(api) == count, timeout=timeout, message=f"{count} nodes schedulable"
    )
