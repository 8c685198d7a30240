"""PLEG health and the Node's conditions and taints from node resource
management (issue 20)."""

from __future__ import annotations

import threading
from typing import Any

import grpc
import pytest

from agent.cri_client import CRIError
from agent.node_loops import NodeLoops
from agent.node_status import NodeConfig, Readings, node_status
from agent.pleg import Pleg
from agent.runtime_view import PodRecord


class View:
    def __init__(self) -> None:
        self.fail = False

    def relist(self, uid: str | None = None) -> dict[str, PodRecord]:
        if self.fail:
            raise CRIError("ListContainers", grpc.StatusCode.DEADLINE_EXCEEDED, "wedged")
        return {}


def test_a_wedged_runtime_makes_pleg_unhealthy_after_three_minutes() -> None:
    clock = [0.0]
    view = View()
    pleg = Pleg(view, lambda uid: None, now=lambda: clock[0])  # type: ignore[arg-type]
    pleg.relist()
    assert pleg.health() is None
    view.fail = True
    clock[0] = 179.0
    with pytest.raises(CRIError):
        pleg.relist()
    assert pleg.health() is None
    clock[0] = 181.0
    health = pleg.health()
    assert health is not None and health.startswith(
        "PLEG is not healthy: pleg was last seen active 3m1s ago; threshold is 3m0s"
    )
    assert "wedged" in health
    view.fail = False
    pleg.relist()
    assert pleg.health() is None


READINGS = Readings(cpus=2, memory_total=8 << 30, memory_available=4 << 30, fs_total=100 << 30,
                    fs_free=50 << 30, pids_used=100, pid_max=4096)  # fmt: skip


def conds(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}


def test_conditions_from_the_eviction_manager_and_runtime_problems() -> None:
    cfg = NodeConfig(name="n")
    st = node_status(cfg, READINGS, "x://1", None, [], pressures={"MemoryPressure": "memory.available is 1"},
                     problems={"ImageFsInfoFailed": "ImageFsInfo: UNIMPLEMENTED"})  # fmt: skip
    c = conds(st)
    assert c["MemoryPressure"][0] == "True" and "memory.available" in c["MemoryPressure"][2]
    assert c["DiskPressure"][0] == "False"
    assert c["ContainerRuntimeUnhealthy"] == (
        "True",
        "ImageFsInfoFailed",
        "ImageFsInfo: UNIMPLEMENTED",
    )
    assert c["Ready"][0] == "True"  # the pods it knows keep being served
    healed = node_status(cfg, READINGS, "x://1", None, [], old=st, pressures={}, problems={})
    assert conds(healed)["ContainerRuntimeUnhealthy"][0] == "False"
    plain = node_status(cfg, READINGS, "x://1", None, [])
    assert "ContainerRuntimeUnhealthy" not in conds(plain)
    wedged = node_status(cfg, READINGS, "x://1", "PLEG is not healthy: ...", [])
    assert conds(wedged)["Ready"][:2] == ("False", "AgentNotReady")


class WedgedRuntime:
    """A CRI client whose every call would hang: the test fails if one is made."""

    def status(self, **kw: Any) -> Any:
        raise AssertionError("Status asked of a wedged runtime")

    def list_images(self, **kw: Any) -> Any:
        raise AssertionError("ListImages asked of a wedged runtime")


def test_node_status_with_pleg_unhealthy_asks_the_runtime_nothing() -> None:
    """The heartbeat reports NotReady without waiting on the wedged runtime,
    and keeps the image list it last reported."""
    clock = [0.0]
    view = View()
    pleg = Pleg(view, lambda uid: None, now=lambda: clock[0], threshold=3.0)  # type: ignore[arg-type]
    pleg.relist()
    clock[0] = 4.0
    loops = NodeLoops(
        NodeConfig(name="n"),
        WedgedRuntime(),  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        None,
        None,  # type: ignore[arg-type]
        threading.Event(),
        pleg=pleg,
    )
    old = {"images": [{"names": ["busybox:1.36"], "sizeBytes": 1}]}
    st = loops.node_status(old)
    assert conds(st)["Ready"][0] == "False" and "PLEG is not healthy" in conds(st)["Ready"][2]
    assert st["images"] == old["images"]
