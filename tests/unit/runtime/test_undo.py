"""The undo paths of RunPodSandbox, CreateContainer, StartContainer and
StopPodSandbox, driven against a fake host that fails each of their host
steps in turn (issue 18, item 2).

For every step n of an RPC: a fresh world, the RPC with step n failing, and
then (1) for a create, the world exactly as before the call; (2) a failed
start or stop, no new process, mount or cgroup; (3) for every RPC, the pod
still removable through the CRI, after which nothing is left:
no mount, namespace pin, cgroup, process, network attachment, image hold,
file or record."""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from proto.runtime.v1 import api_pb2
from runtime.config import Config
from runtime.cri import (
    container_create,
    container_remove,
    container_start,
    sandbox_remove,
    sandbox_run,
    sandbox_stop,
)
from runtime.cri.service import RuntimeService
from tests.fakes.fake_host import FakeHost
from tests.fakes.image_store import FakeImageStore

_seq = itertools.count()


class FakeNetwork:
    """CNI ADD/DEL as steps of the same fake host (its netns attachments)."""

    def __init__(self, host: FakeHost) -> None:
        self.host = host
        self.attached: set[str] = set()

    def status(self) -> str | None:
        return None

    def setup(self, sandbox_id: str, netns_path: str, **kw: Any) -> Any:
        self.host.step("cni add", monitor=False)
        self.attached.add(sandbox_id)
        return type("Result", (), {"ips": ["10.88.0.5/24"]})()

    def teardown(self, sandbox_id: str, netns_path: str, **kw: Any) -> Any:
        self.host.step("cni del")
        self.attached.discard(sandbox_id)


@dataclass
class World:
    tmp: Path
    host: FakeHost
    network: FakeNetwork
    images: FakeImageStore
    svc: RuntimeService
    sid: str = ""
    cid: str = ""

    def snapshot(self) -> dict[str, Any]:
        files = sorted(
            str(p.relative_to(self.tmp))
            for p in self.tmp.rglob("*")
            if "images" not in p.relative_to(self.tmp).parts[:1]
        )
        return {
            "files": files,
            "mounts": set(self.host.mounts),
            "pins": set(self.host.pins),
            "cgroups": set(self.host.cgroups_made),
            "procs": self.host.live(),
            "net": set(self.network.attached),
            "holds": {k: set(v) for k, v in self.images.holds.items() if v},
            "sandboxes": {s.id for s in self.svc.sandboxes.list()},
            "containers": {c.id for c in self.svc.containers.list()},
        }


def world(base: Path) -> World:
    tmp = base / f"w{next(_seq)}"
    layer = tmp / "images" / "layer"
    layer.mkdir(parents=True)
    images = FakeImageStore(tmp / "images")
    image = {"id": "sha256:b0", "layers": [str(layer)], "config": {"config": {"Cmd": ["sh"]}}}
    (tmp / "images" / "images.json").write_text(json.dumps({"busybox:latest": image}))
    host = FakeHost()
    net = FakeNetwork(host)
    cfg = Config(root=tmp / "root", state=tmp / "state", cgroup_root=tmp / "cg")
    # (the server makes these at start; they outlive every pod)
    for top in ("root", "state"):
        for kind in ("sandboxes", "containers"):
            (tmp / top / kind).mkdir(parents=True)
    return World(tmp, host, net, images, RuntimeService(cfg, images, net, host))


def pod_config(w: World) -> api_pb2.PodSandboxConfig:
    return api_pb2.PodSandboxConfig(
        metadata=api_pb2.PodSandboxMetadata(name="p", uid="u1", namespace="default"),
        hostname="p",
        log_directory=str(w.tmp / "logs" / "default_p_u1"),
        linux=api_pb2.LinuxPodSandboxConfig(
            security_context=api_pb2.LinuxSandboxSecurityContext(
                namespace_options=api_pb2.NamespaceOption(pid=api_pb2.POD)
            )
        ),
    )


def run_sandbox(w: World) -> None:
    Path(pod_config(w).log_directory).mkdir(parents=True, exist_ok=True)  # the kubelet's job
    req = api_pb2.RunPodSandboxRequest(config=pod_config(w))
    w.sid = sandbox_run.run(w.svc, req).pod_sandbox_id


def create_container(w: World) -> None:
    cfg = api_pb2.ContainerConfig(
        metadata=api_pb2.ContainerMetadata(name="c"),
        image=api_pb2.ImageSpec(image="busybox:latest"),
        log_path="c/0.log",
    )
    req = api_pb2.CreateContainerRequest(
        pod_sandbox_id=w.sid, config=cfg, sandbox_config=pod_config(w)
    )
    w.cid = container_create.run(w.svc, req).container_id


def start_container(w: World) -> None:
    container_start.run(w.svc, api_pb2.StartContainerRequest(container_id=w.cid))


def stop_sandbox(w: World) -> None:
    sandbox_stop.run(w.svc, api_pb2.StopPodSandboxRequest(pod_sandbox_id=w.sid))


def remove_all(w: World) -> None:
    for c in w.svc.containers.list():
        container_remove.run(w.svc, api_pb2.RemoveContainerRequest(container_id=c.id))
    for s in w.svc.sandboxes.list():
        sandbox_stop.run(w.svc, api_pb2.StopPodSandboxRequest(pod_sandbox_id=s.id))
        sandbox_remove.run(w.svc, api_pb2.RemovePodSandboxRequest(pod_sandbox_id=s.id))
    # (the pod's log directory is the kubelet's: it makes and removes it)
    for p in sorted(Path(pod_config(w).log_directory).rglob("*"), reverse=True):
        p.unlink() if p.is_file() else p.rmdir()


Step = Callable[[World], None]
CASES: dict[str, tuple[list[Step], Step, bool]] = {
    # name: (what runs first, the RPC under test, whether it creates)
    "sandbox_run": ([], run_sandbox, True),
    "container_create": ([run_sandbox], create_container, True),
    "container_start": ([run_sandbox, create_container], start_container, False),
    "sandbox_stop": ([run_sandbox, create_container, start_container], stop_sandbox, False),
}


def count_steps(base: Path, name: str) -> int:
    before, rpc, _ = CASES[name]
    w = world(base)
    for f in before:
        f(w)
    start = w.host.steps
    rpc(w)
    return w.host.steps - start


@pytest.mark.parametrize("name", list(CASES))
def test_each_failed_step_leaves_nothing_behind(tmp_path: Path, name: str) -> None:
    before, rpc, creates = CASES[name]
    n = count_steps(tmp_path, name)
    assert n >= 2
    for i in range(1, n + 1):
        w = world(tmp_path)
        Path(pod_config(w).log_directory).mkdir(parents=True)
        empty = w.snapshot()
        for f in before:
            f(w)
        prior = w.snapshot()
        w.host.fail_at = w.host.steps + i
        failing = w.host.steps
        with pytest.raises(Exception) as info:
            rpc(w)
        what = f"{name}: step {i}/{n} ({w.host.log[failing + i - 1]}): {info.value}"
        after = w.snapshot()
        if creates:
            assert after == prior, what
        else:  # nothing new runs or stays mounted after a failed start/stop
            assert after["procs"] <= prior["procs"], what
            for kind in ("mounts", "pins", "cgroups", "net"):
                assert after[kind] <= prior[kind], what
        remove_all(w)
        assert w.snapshot() == empty, what


def test_step_counts_reported(tmp_path: Path) -> None:
    counts = {name: count_steps(tmp_path, name) for name in CASES}
    # RunPodSandbox: dirs, files, cgroup, shm, monitor, pins, CNI, report
    assert counts["sandbox_run"] >= 15, counts
    assert sum(counts.values()) >= 30, counts


def test_sandbox_config_round_trips(tmp_path: Path) -> None:
    w = world(tmp_path)
    run_sandbox(w)
    s = w.svc.sandboxes.get(w.sid)
    assert base64.b64decode(s.config_b64) == pod_config(w).SerializeToString()
    assert s.ip == "10.88.0.5" and w.host.mounts and len(w.host.pins) == 3
