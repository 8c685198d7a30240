"""Hollow nodes: a pod's deletion is never lost while its start is in flight;
the time of the last bind is when it was seen."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from agent.hollow import HollowConfig, HollowNodes
from controlplane.client.interface import DeleteOptions, Object
from tests.fakes.fake_apiclient import FakeApiClient
from tests.harness.wait import wait_for


class _SlowStatus(FakeApiClient):
    """Pod status patches wait until `release` is set."""

    def __init__(self) -> None:
        super().__init__(graceful_pod_delete=True)
        self.patching = threading.Event()
        self.release = threading.Event()

    def patch(
        self, kind: str, name: str, patch: Object, namespace: str | None = None,
        subresource: str = "",
    ) -> Object:  # fmt: skip
        if kind == "Pod" and subresource == "status":
            self.patching.set()
            assert self.release.wait(10)
        return super().patch(kind, name, patch, namespace, subresource)


@pytest.fixture
def hollow() -> Iterator[tuple[HollowNodes, _SlowStatus]]:
    api = _SlowStatus()
    nodes = HollowNodes(api, HollowConfig(nodes=1, workers=2))
    try:
        yield nodes, api
    finally:
        api.release.set()
        nodes.stop()


def test_deletion_while_starting_finishes_the_pod(hollow: tuple[HollowNodes, _SlowStatus]) -> None:
    nodes, api = hollow
    node = next(iter(nodes.nodes))
    pod = api.create(
        "Pod",
        {"metadata": {"name": "p", "namespace": "default"},
         "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]}},
    )  # fmt: skip
    nodes._on_pod(pod)  # the informer's add: the start is now in flight
    assert api.patching.wait(10)
    api.delete("Pod", "p", "default", DeleteOptions(grace_period_seconds=30))
    deleting = api.get("Pod", "p", "default")
    assert deleting["metadata"].get("deletionTimestamp")
    nodes._on_pod(deleting)  # the informer's update, while the start still runs
    api.release.set()

    # The fake drops the marked pod on any write; what the agent owes is its
    # last step, the delete with grace 0, after the start it was busy with.
    wait_for(
        lambda: len(api.calls_of("delete", "Pod")) == 2,
        timeout=10,
        message="the hollow node never finished the deleted pod",
    )


def test_the_command_sizes_its_nodes() -> None:
    """`python -m agent.hollow --cpu/--memory/--max-pods`: nodes of the size a
    case's arithmetic needs (the config always had the fields)."""
    from agent.hollow import node_object, parse_args

    _args, cfg = parse_args(["--credentials", "x", "--cpu", "4", "--memory", "16Gi",
                             "--max-pods", "20"])  # fmt: skip
    node = node_object(cfg, "h-0", "10.128.0.1")
    assert node["status"]["allocatable"] == {"cpu": "4", "memory": "16Gi", "pods": "20"}


def test_a_bad_size_is_refused_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    from agent.hollow import parse_args

    with pytest.raises(SystemExit):
        parse_args(["--credentials", "x", "--cpu", "lots"])
    assert "argument --cpu: 'lots' is not a quantity" in capsys.readouterr().err


def test_the_time_of_the_last_bind_is_when_the_informer_saw_it() -> None:
    # The Pod informer watches bound pods only: a pod added is a pod bound.
    from agent.hollow import BOUND

    now = [100.0]
    nodes = HollowNodes(FakeApiClient(), HollowConfig(nodes=1), clock=lambda: now[0])
    try:
        assert nodes._pods().reflector.field_selector == BOUND == "spec.nodeName!="
        bound: Object = {"metadata": {"name": "p", "namespace": "d", "uid": "u"},
                         "spec": {"nodeName": "elsewhere"}}  # fmt: skip
        now[0] = 101.0
        nodes._on_pod_add(bound)
        assert nodes.stats.last_bound_at == 101.0
        now[0] = 102.0  # a later change to a bound pod (its status) is not a bind
        nodes._on_pod_update(bound, {**bound, "status": {"phase": "Running"}})
        assert nodes.stats.last_bound_at == 101.0
        now[0] = 103.0
        nodes._on_pod_add({**bound, "metadata": {"name": "q", "namespace": "d", "uid": "v"}})
        assert nodes.stats.last_bound_at == 103.0
    finally:
        nodes.stop()
