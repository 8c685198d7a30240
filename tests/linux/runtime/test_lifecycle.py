"""CRI lifecycle through the real socket: sandbox and container run, status,
list, logs, exec, stop and remove, with real namespaces and cgroups."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import grpc
import pytest

from proto.runtime.v1 import api_pb2
from tests.harness.wait import wait_for
from tests.linux.runtime.harness import Runtime, container_config, pod_config

pytestmark = pytest.mark.root

LOG_LINE = re.compile(rb"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z (stdout|stderr) (F|P) (.*)$")


def run_pod(r: Runtime, tmp: Path, name: str = "pod", **kw) -> tuple[str, api_pb2.PodSandboxConfig]:
    cfg = pod_config(name, log_directory=str(tmp / "logs" / name), **kw)
    sid = r.rt.RunPodSandbox(api_pb2.RunPodSandboxRequest(config=cfg)).pod_sandbox_id
    return sid, cfg


def create(
    r: Runtime, sid: str, pcfg: api_pb2.PodSandboxConfig, cfg: api_pb2.ContainerConfig
) -> str:
    cid: str = r.rt.CreateContainer(
        api_pb2.CreateContainerRequest(pod_sandbox_id=sid, config=cfg, sandbox_config=pcfg)
    ).container_id
    return cid


def status(r: Runtime, cid: str) -> Any:
    return r.rt.ContainerStatus(api_pb2.ContainerStatusRequest(container_id=cid)).status


def exec_sync(r: Runtime, cid: str, cmd: list[str], timeout: int = 10) -> Any:
    return r.rt.ExecSync(api_pb2.ExecSyncRequest(container_id=cid, cmd=cmd, timeout=timeout))


def test_version_status_runtime_config(runtime: Runtime) -> None:
    v = runtime.rt.Version(api_pb2.VersionRequest())
    assert v.runtime_name == "skiff" and v.runtime_version and v.runtime_api_version == "v1"
    st = runtime.rt.Status(api_pb2.StatusRequest())
    conds = {c.type: c for c in st.status.conditions}
    assert conds["RuntimeReady"].status
    assert not conds["NetworkReady"].status and conds["NetworkReady"].reason
    rc = runtime.rt.RuntimeConfig(api_pb2.RuntimeConfigRequest())
    assert rc.linux.cgroup_driver == api_pb2.CGROUPFS
    with pytest.raises(grpc.RpcError) as exc:
        runtime.rt.CheckpointContainer(api_pb2.CheckpointContainerRequest(container_id="x"))
    assert exc.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_pod_and_container_lifecycle(runtime: Runtime, tmp_path: Path) -> None:
    r = runtime
    sid, pcfg = run_pod(r, tmp_path, "web", labels={"app": "web"})
    st = r.rt.PodSandboxStatus(api_pb2.PodSandboxStatusRequest(pod_sandbox_id=sid)).status
    assert st.state == api_pb2.SANDBOX_READY and st.metadata.name == "web"
    assert [p.id for p in r.rt.ListPodSandbox(api_pb2.ListPodSandboxRequest()).items] == [sid]

    ccfg = container_config(
        "c1",
        [
            "sh",
            "-c",
            "echo hello; hostname; echo oops >&2; cat /proc/1/cmdline; echo; exec sleep 1000",
        ],
        log_path="c1/0.log",
        labels={"tier": "a"},
        linux=api_pb2.LinuxContainerConfig(
            resources=api_pb2.LinuxContainerResources(
                cpu_quota=50000, cpu_period=100000, memory_limit_in_bytes=64 << 20
            )
        ),
    )
    cid = create(r, sid, pcfg, ccfg)
    assert status(r, cid).state == api_pb2.CONTAINER_CREATED
    r.rt.StartContainer(api_pb2.StartContainerRequest(container_id=cid))
    s = status(r, cid)
    assert s.state == api_pb2.CONTAINER_RUNNING and s.started_at > 0
    log = Path(pcfg.log_directory) / "c1/0.log"
    wait_for(lambda: log.exists() and log.read_bytes().count(b"\n") >= 4, message="log lines")
    lines = log.read_bytes().splitlines()
    parsed = [LOG_LINE.match(ln) for ln in lines]
    assert all(parsed), lines
    msgs = [(m.group(2), m.group(4)) for m in parsed if m]
    assert (
        (b"stdout", b"hello") in msgs
        and (b"stdout", b"web") in msgs
        and (b"stderr", b"oops") in msgs
    )

    out = exec_sync(r, cid, ["echo", "-n", "hello"])
    assert out.stdout == b"hello" and out.stderr == b"" and out.exit_code == 0
    out = exec_sync(r, cid, ["sh", "-c", "echo -n err >&2; exit 3"])
    assert out.stderr == b"err" and out.exit_code == 3
    # pid namespace: the pod's shared one, pid 1 is not our command
    out = exec_sync(r, cid, ["cat", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"])

    listed = r.rt.ListContainers(api_pb2.ListContainersRequest(
        filter=api_pb2.ContainerFilter(label_selector={"tier": "a"}))).containers  # fmt: skip
    assert [c.id for c in listed] == [cid]

    t0 = time.monotonic()
    r.rt.StopContainer(api_pb2.StopContainerRequest(container_id=cid, timeout=1))
    assert time.monotonic() - t0 < 5
    s = status(r, cid)
    assert s.state == api_pb2.CONTAINER_EXITED and s.exit_code == 143 and s.reason == "Error"
    r.rt.RemoveContainer(api_pb2.RemoveContainerRequest(container_id=cid))
    with pytest.raises(grpc.RpcError) as exc:
        status(r, cid)
    assert exc.value.code() == grpc.StatusCode.NOT_FOUND
    r.rt.StopPodSandbox(api_pb2.StopPodSandboxRequest(pod_sandbox_id=sid))
    r.rt.StopPodSandbox(api_pb2.StopPodSandboxRequest(pod_sandbox_id=sid))
    st = r.rt.PodSandboxStatus(api_pb2.PodSandboxStatusRequest(pod_sandbox_id=sid)).status
    assert st.state == api_pb2.SANDBOX_NOTREADY
    r.rt.RemovePodSandbox(api_pb2.RemovePodSandboxRequest(pod_sandbox_id=sid))
    r.rt.RemovePodSandbox(api_pb2.RemovePodSandboxRequest(pod_sandbox_id=sid))
    r.rt.StopPodSandbox(api_pb2.StopPodSandboxRequest(pod_sandbox_id="nope"))
    r.rt.StopContainer(api_pb2.StopContainerRequest(container_id="nope"))
    r.rt.RemoveContainer(api_pb2.RemoveContainerRequest(container_id="nope"))
    assert not r.rt.ListPodSandbox(api_pb2.ListPodSandboxRequest()).items


def test_socket_mode_and_two_runtimes_side_by_side(
    runtime: Runtime, tmp_path: Path, busybox_rootfs: Path
) -> None:
    import os
    import stat

    from tests.linux.runtime.harness import running_runtime

    assert stat.S_IMODE(os.stat(runtime.socket).st_mode) == 0o660
    with running_runtime(tmp_path / "second", busybox_rootfs) as other:
        sid1, p1 = run_pod(runtime, tmp_path, "one")
        sid2, p2 = run_pod(other, tmp_path, "two")
        c1 = create(runtime, sid1, p1, container_config("c", ["sleep", "1000"]))
        c2 = create(other, sid2, p2, container_config("c", ["sleep", "1000"]))
        for r, c in ((runtime, c1), (other, c2)):
            r.rt.StartContainer(api_pb2.StartContainerRequest(container_id=c))
        assert [p.id for p in runtime.rt.ListPodSandbox(api_pb2.ListPodSandboxRequest()).items] == [
            sid1
        ]
        assert [p.id for p in other.rt.ListPodSandbox(api_pb2.ListPodSandboxRequest()).items] == [
            sid2
        ]
        assert exec_sync(other, c2, ["hostname"]).stdout == b"two\n"
        assert exec_sync(runtime, c1, ["hostname"]).stdout == b"one\n"
