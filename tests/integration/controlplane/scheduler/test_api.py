"""Through the real API server (in-process, SQLite): informers in, binds and explanations out."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.apiserver.server import ApiServer, ApiServerConfig
from controlplane.apiserver.tls import ensure_pki
from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.config import ClientConfig
from controlplane.client.interface import DeleteOptions
from controlplane.scheduler.run import SchedulerService
from controlplane.scheduler.scheduler import SCORES_ANNOTATION
from controlplane.storage.sqlite import SqliteStore
from tests.fakes.scheduler_objects import make_node, make_pod
from tests.harness.wait import wait_for


@pytest.fixture
def client(tmp_path: Path) -> Iterator[GrpcApiClient]:
    store = SqliteStore(tmp_path / "state.db")
    pki = ensure_pki(tmp_path)
    server = ApiServer(store, ApiServerConfig(listen="127.0.0.1:0", bookmark_interval=0.2), pki)
    port = server.start()
    assert server.authority is not None
    c = connect(
        ClientConfig(f"127.0.0.1:{port}", pki.ca_pem, server.authority.admin_token()), timeout=10
    )
    try:
        yield c
    finally:
        c.close()
        server.stop(0.5)
        store.close()


def api_node(name: str, cpu: str) -> dict[str, object]:
    node = make_node(name, cpu=cpu)
    return {k: v for k, v in node.items() if k != "status"} | {"status": node["status"]}


def ready(client: GrpcApiClient, created: dict[str, Any], cpu: str) -> None:
    """The Node's status as its agent reports it, and the not-ready taint it
    got at creation gone, as the node lifecycle controller (not running
    here) removes it once the node is Ready."""
    created["status"] = make_node(created["metadata"]["name"], cpu=cpu)["status"]
    client.update_status("Node", created)
    client.patch("Node", created["metadata"]["name"], {"spec": {"taints": None}})


def test_schedules_through_the_api_server(client: GrpcApiClient) -> None:
    for name, cpu in [("small", "1"), ("large", "4"), ("medium", "3")]:
        created = client.create("Node", api_node(name, cpu))
        ready(client, created, cpu)
    service = SchedulerService(client, bind_workers=2)
    stop = threading.Event()
    thread = threading.Thread(target=service.run, args=(stop,), daemon=True)
    thread.start()
    try:
        client.create("Pod", make_pod("fits", cpu="2"), "default")
        client.create("Pod", make_pod("too-big", cpu="8"), "default")

        def node_of(name: str) -> str:
            return str((client.get("Pod", name, "default").get("spec") or {}).get("nodeName") or "")

        wait_for(lambda: node_of("fits") == "large")
        pod = client.get("Pod", "fits", "default")
        scores = json.loads(pod["metadata"]["annotations"][SCORES_ANNOTATION])
        assert scores["chosen"]["node"] == "large" and scores["runnerUp"]["node"] == "medium"
        assert (
            scores["chosen"]["plugins"]["NodeResourcesFit"][0]
            > scores["runnerUp"]["plugins"]["NodeResourcesFit"][0]
        )

        def explained() -> bool:
            conds = (client.get("Pod", "too-big", "default").get("status") or {}).get(
                "conditions"
            ) or []
            return any(c.get("reason") == "Unschedulable" for c in conds)

        wait_for(explained)
        conds = client.get("Pod", "too-big", "default")["status"]["conditions"]
        assert conds[0]["message"].startswith("0/3 nodes are available: 3 Insufficient cpu.")
        # The Event is written right after the condition.
        wait_for(
            lambda: any(
                e.get("reason") == "FailedScheduling" for e in client.list("Event", "default").items
            )
        )
        assert node_of("too-big") == ""
        # A bigger node arrives: the pending pod is retried and bound.
        created = client.create("Node", api_node("huge", "16"))
        ready(client, created, "16")
        wait_for(lambda: node_of("too-big") == "huge", timeout=15)
    finally:
        stop.set()
        service.scheduler.queue.close()
        thread.join(10)


def test_leader_elected_component(client: GrpcApiClient) -> None:
    from controlplane.scheduler.run import run

    created = client.create("Node", api_node("n1", "2"))
    ready(client, created, "2")
    stop = threading.Event()
    thread = threading.Thread(target=run, args=(client, stop), daemon=True)
    thread.start()
    try:
        # Leading with no pod, it sleeps (wake.py); the pods that wake it all count:
        # the bound one holds half the node, so one of the other two fits.
        wait_for(lambda: any(o["metadata"]["name"] == "skiff-scheduler"
                             for o in client.list("Lease", "kube-system").items))  # fmt: skip
        client.create("Pod", make_pod("there", cpu="1", node_name="n1"), "default")
        for name in ("p", "q"):
            client.create("Pod", make_pod(name, cpu="1"), "default")

        def node_of(name: str) -> str:
            return str((client.get("Pod", name, "default").get("spec") or {}).get("nodeName") or "")

        def unschedulable(name: str) -> bool:
            conds = (client.get("Pod", name, "default").get("status") or {}).get("conditions")
            return any(c.get("reason") == "Unschedulable" for c in conds or ())

        wait_for(lambda: {node_of("p"), node_of("q")} == {"n1", ""})
        wait_for(lambda: unschedulable("p") or unschedulable("q"))
        assert {node_of("p"), node_of("q")} == {"n1", ""}
        lease = client.get("Lease", "skiff-scheduler", "kube-system")
        assert lease["spec"]["holderIdentity"]
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()


def test_preemption_through_the_api_server(client: GrpcApiClient) -> None:
    for name, value in [("low-prio", 1), ("high-prio", 1000)]:
        client.create(
            "PriorityClass",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            },
        )
    created = client.create("Node", api_node("n1", "2"))
    ready(client, created, "2")
    client.create(
        "Pod",
        make_pod(
            "low",
            cpu="2",
            node_name="n1",
            spec={"terminationGracePeriodSeconds": 30, "priorityClassName": "low-prio"},
        ),
        "default",
    )
    service = SchedulerService(client, bind_workers=2)
    stop = threading.Event()
    thread = threading.Thread(target=service.run, args=(stop,), daemon=True)
    thread.start()
    try:
        client.create(
            "Pod", make_pod("high", cpu="1", spec={"priorityClassName": "high-prio"}), "default"
        )

        def nominated() -> bool:
            return (client.get("Pod", "high", "default").get("status") or {}).get(
                "nominatedNodeName"
            ) == "n1"

        wait_for(nominated)
        # The victim was deleted with its grace period: it is terminating, not gone.
        low = client.get("Pod", "low", "default")
        assert low["metadata"].get("deletionTimestamp")
        # When it is gone (its node's agent would finish it), the preemptor is bound.
        client.delete("Pod", "low", "default", DeleteOptions(grace_period_seconds=0))
        wait_for(
            lambda: (
                (client.get("Pod", "high", "default").get("spec") or {}).get("nodeName") == "n1"
            ),
            timeout=20,
        )
    finally:
        stop.set()
        service.scheduler.queue.close()
        thread.join(10)
