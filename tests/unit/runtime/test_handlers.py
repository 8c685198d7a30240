"""RPC handlers run against a RuntimeService with fakes (no root, no
processes): validation, NOT_FOUND / idempotent Stop and Remove, status
conditions, and recovery from checkpoints."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.config import Config
from runtime.cri import (
    container_create,
    container_remove,
    container_stop,
    sandbox_remove,
    sandbox_run,
    sandbox_stop,
    status,
    version,
)
from runtime.cri.sandbox_run import check_sysctls, resolv_conf
from runtime.cri.service import RuntimeService
from runtime.recover import recover
from runtime.store.records import Container, ContainerState, Sandbox, SandboxState
from tests.fakes.image_store import FakeImageStore


class FakeNetwork:
    def __init__(self, reason: str | None = None) -> None:
        self.reason = reason
        self.calls: list[tuple[str, str]] = []

    def status(self) -> str | None:
        return self.reason

    def setup(self, sandbox_id: str, netns_path: str, **kw: Any) -> Any:
        self.calls.append(("setup", sandbox_id))

    def teardown(self, sandbox_id: str, netns_path: str, **kw: Any) -> Any:
        self.calls.append(("teardown", sandbox_id))


def service(tmp_path: Path, network: FakeNetwork | None = None) -> RuntimeService:
    cfg = Config(root=tmp_path / "root", state=tmp_path / "state", cgroup_root=tmp_path / "cg")
    return RuntimeService(cfg, FakeImageStore(tmp_path / "images"), network)


def test_version_and_status(tmp_path: Path) -> None:
    svc = service(tmp_path)
    assert version.run(svc, api_pb2.VersionRequest()).runtime_name == "skiff"
    conds = {c.type: c for c in status.run(svc, api_pb2.StatusRequest()).status.conditions}
    assert conds["RuntimeReady"].status and not conds["NetworkReady"].status
    assert conds["NetworkReady"].reason == "NetworkPluginNotReady"
    svc = service(tmp_path, FakeNetwork(None))
    conds = {c.type: c for c in status.run(svc, api_pb2.StatusRequest()).status.conditions}
    assert conds["NetworkReady"].status
    svc = service(tmp_path, FakeNetwork("cni config uninitialized"))
    conds = {c.type: c for c in status.run(svc, api_pb2.StatusRequest()).status.conditions}
    assert conds["NetworkReady"].message == "cni config uninitialized"


def test_bad_sandbox_requests(tmp_path: Path) -> None:
    svc = service(tmp_path)
    with pytest.raises(errors.InvalidArgument, match="metadata"):
        sandbox_run.run(svc, api_pb2.RunPodSandboxRequest(config=api_pb2.PodSandboxConfig()))
    md = api_pb2.PodSandboxMetadata(name="p", uid="u", namespace="n")
    with pytest.raises(errors.InvalidArgument, match="handler"):
        sandbox_run.run(
            svc,
            api_pb2.RunPodSandboxRequest(
                config=api_pb2.PodSandboxConfig(metadata=md), runtime_handler="kata"
            ),
        )


def test_sysctl_rules_and_resolv_conf() -> None:
    check_sysctls({"net.ipv4.ip_forward": "1", "kernel.shm_rmid_forced": "1"}, True, True, True)
    with pytest.raises(errors.InvalidArgument, match="namespace"):
        check_sysctls({"net.ipv4.ip_forward": "1"}, False, True, True)
    with pytest.raises(errors.InvalidArgument, match="not namespaced"):
        check_sysctls({"vm.swappiness": "1"}, True, True, True)
    dns = api_pb2.DNSConfig(servers=["10.0.0.10"], searches=["a.svc", "svc"], options=["ndots:5"])
    assert resolv_conf(dns) == "nameserver 10.0.0.10\nsearch a.svc svc\noptions ndots:5\n"


def test_unknown_ids(tmp_path: Path) -> None:
    svc = service(tmp_path)
    # Stop and Remove of what does not exist succeed, as containerd's do
    container_stop.run(svc, api_pb2.StopContainerRequest(container_id="nope"))
    container_remove.run(svc, api_pb2.RemoveContainerRequest(container_id="nope"))
    sandbox_stop.run(svc, api_pb2.StopPodSandboxRequest(pod_sandbox_id="nope"))
    sandbox_remove.run(svc, api_pb2.RemovePodSandboxRequest(pod_sandbox_id="nope"))
    with pytest.raises(errors.NotFound):
        container_create.run(
            svc,
            api_pb2.CreateContainerRequest(
                pod_sandbox_id="nope",
                config=api_pb2.ContainerConfig(
                    metadata=api_pb2.ContainerMetadata(name="c"), image=api_pb2.ImageSpec(image="x")
                ),
            ),
        )
    with pytest.raises(errors.InvalidArgument, match="name"):
        container_create.run(svc, api_pb2.CreateContainerRequest(pod_sandbox_id="nope"))


def test_recover_marks_dead_objects(tmp_path: Path) -> None:
    svc = service(tmp_path)
    cfg = api_pb2.PodSandboxConfig(
        metadata=api_pb2.PodSandboxMetadata(name="p", uid="u", namespace="n")
    )
    s = Sandbox("s1", "p", "n", "u", 0, base64.b64encode(cfg.SerializeToString()).decode(), 1)
    s.monitor_pid = 2**22 - 1  # no such process
    svc.sandboxes.save(s)
    c = Container(
        "c1", "s1", "c", 0, "", 1, "img", "ref", "id", "", "/x/c1", state=ContainerState.RUNNING
    )
    c.monitor_pid = 2**22 - 1
    c.started_at = 5
    svc.containers.save(c)
    created = Container("c2", "s1", "d", 0, "", 1, "img", "ref", "id", "", "/x/c2")
    svc.containers.save(created)
    (svc.container_root("c1") / "exit.json").write_text(
        '{"exit_code": 7, "finished_at": 9, "oom_killed": false}'
    )
    fresh = service(tmp_path)
    assert recover(fresh) == (1, 2)
    assert fresh.sandboxes.get("s1").state == SandboxState.NOTREADY
    got = fresh.containers.get("c1")
    assert (got.state, got.exit_code, got.reason) == (ContainerState.EXITED, 7, "Error")
    assert fresh.containers.get("c2").state == ContainerState.CREATED
