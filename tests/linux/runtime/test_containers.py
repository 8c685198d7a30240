"""Container behaviour through the real socket: isolation, limits, OOM,
grace periods, exec timeouts, log reopen, stats, updates, bad input, and
creates that fail halfway leaving nothing behind."""

from __future__ import annotations

import time
from pathlib import Path

import grpc
import pytest

from proto.runtime.v1 import api_pb2
from tests.harness.wait import wait_for
from tests.linux.runtime.harness import Runtime, cgroup_dirs, container_config
from tests.linux.runtime.test_lifecycle import create, exec_sync, run_pod, status

pytestmark = pytest.mark.root

CONTAINER_PID = api_pb2.NamespaceOption(pid=api_pb2.CONTAINER)


def started(r: Runtime, sid, pcfg, cfg) -> str:
    cid = create(r, sid, pcfg, cfg)
    r.rt.StartContainer(api_pb2.StartContainerRequest(container_id=cid))
    return cid


def sec(**kw) -> api_pb2.LinuxContainerConfig:
    return api_pb2.LinuxContainerConfig(
        security_context=api_pb2.LinuxContainerSecurityContext(**kw)
    )


def test_isolation_hostname_pid1_cpu_quota(runtime: Runtime, tmp_path: Path) -> None:
    r = runtime
    sid, pcfg = run_pod(r, tmp_path, "iso", hostname="iso-host")
    linux = api_pb2.LinuxContainerConfig(
        resources=api_pb2.LinuxContainerResources(cpu_quota=20000, cpu_period=100000),
        security_context=api_pb2.LinuxContainerSecurityContext(namespace_options=CONTAINER_PID),
    )
    cid = started(r, sid, pcfg, container_config("c", ["sleep", "1000"], linux=linux))
    assert exec_sync(r, cid, ["hostname"]).stdout == b"iso-host\n"
    assert exec_sync(r, cid, ["cat", "/proc/1/cmdline"]).stdout == b"sleep\x001000\x00"
    quota = [d for d in cgroup_dirs(r.cgroup_parent) if d.parent.name == "cpu"]
    if quota:
        assert (quota[0] / cid / "cpu.cfs_quota_us").read_text().strip() == "20000"
    # the process sees its own cgroup limit and no host processes
    ps = exec_sync(r, cid, ["ps", "-o", "pid,comm"]).stdout.decode()
    assert "pytest" not in ps and "python" not in ps
    r.rt.UpdateContainerResources(
        api_pb2.UpdateContainerResourcesRequest(
            container_id=cid,
            linux=api_pb2.LinuxContainerResources(cpu_quota=30000, cpu_period=100000),
        )
    )
    if quota:
        assert (quota[0] / cid / "cpu.cfs_quota_us").read_text().strip() == "30000"
    assert status(r, cid).resources.linux.cpu_quota == 30000
    stats = r.rt.ContainerStats(api_pb2.ContainerStatsRequest(container_id=cid)).stats
    assert stats.cpu.timestamp > 0 and stats.memory.timestamp > 0
    assert stats.memory.working_set_bytes.value > 0


def test_oom_killed_is_reported(runtime: Runtime, tmp_path: Path) -> None:
    r = runtime
    sid, pcfg = run_pod(r, tmp_path, "oom")
    linux = api_pb2.LinuxContainerConfig(
        resources=api_pb2.LinuxContainerResources(memory_limit_in_bytes=32 << 20)
    )
    cmd = ["dd", "if=/dev/zero", "of=/dev/null", "bs=256M", "count=1"]
    cid = started(r, sid, pcfg, container_config("hog", cmd, linux=linux))
    wait_for(
        lambda: status(r, cid).state == api_pb2.CONTAINER_EXITED, timeout=20, message="OOM exit"
    )
    s = status(r, cid)
    assert s.reason == "OOMKilled" and s.exit_code == 137


def test_stop_grace_period_then_kill(runtime: Runtime, tmp_path: Path) -> None:
    r = runtime
    sid, pcfg = run_pod(r, tmp_path, "grace")
    cmd = ["sh", "-c", "trap '' TERM; while true; do sleep 0.1; done"]
    cid = started(r, sid, pcfg, container_config("stubborn", cmd))
    wait_for(lambda: b"sleep" in exec_sync(r, cid, ["ps"]).stdout, message="loop running")
    t0 = time.monotonic()
    r.rt.StopContainer(api_pb2.StopContainerRequest(container_id=cid, timeout=2))
    took = time.monotonic() - t0
    assert 1.9 <= took < 6
    s = status(r, cid)
    assert s.state == api_pb2.CONTAINER_EXITED and s.exit_code == 137
    # a polite process stops at once
    cid2 = started(r, sid, pcfg, container_config("polite", ["sleep", "1000"]))
    t0 = time.monotonic()
    r.rt.StopContainer(api_pb2.StopContainerRequest(container_id=cid2, timeout=30))
    assert time.monotonic() - t0 < 3
    assert status(r, cid2).exit_code == 143


def test_exec_timeout_kills_process_and_exit_codes(runtime: Runtime, tmp_path: Path) -> None:
    r = runtime
    sid, pcfg = run_pod(r, tmp_path, "ex")
    cid = started(r, sid, pcfg, container_config("c", ["sleep", "1000"]))
    with pytest.raises(grpc.RpcError) as exc:
        exec_sync(r, cid, ["sh", "-c", "sleep 60"], timeout=1)
    assert exc.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    out = exec_sync(r, cid, ["sh", "-c", "pgrep -f 'sleep 60' || true"])
    assert out.stdout == b""
    assert exec_sync(r, cid, ["false"]).exit_code == 1
    with pytest.raises(grpc.RpcError) as exc:
        exec_sync(r, cid, ["/no/such/binary"])
    assert exc.value.code() == grpc.StatusCode.UNKNOWN


def test_log_reopen_and_partial_lines(runtime: Runtime, tmp_path: Path) -> None:
    r = runtime
    sid, pcfg = run_pod(r, tmp_path, "logs")
    cmd = [
        "sh",
        "-c",
        "head -c 20000 /dev/zero | tr '\\0' x; echo; while true; do echo tick; sleep 0.05; done",
    ]
    cid = started(r, sid, pcfg, container_config("c", cmd, log_path="c.log"))
    log = Path(pcfg.log_directory) / "c.log"
    wait_for(lambda: b" stdout F tick" in log.read_bytes(), message="tick in log")
    first = log.read_bytes().splitlines()
    assert first[0].split(b" ")[2] == b"P" and first[1].split(b" ")[2] == b"F"
    assert len(first[0].split(b" ", 3)[3]) + len(first[1].split(b" ", 3)[3]) == 20000
    rotated = log.with_name("c.log.1")
    log.rename(rotated)
    r.rt.ReopenContainerLog(api_pb2.ReopenContainerLogRequest(container_id=cid))
    wait_for(lambda: log.exists() and b"tick" in log.read_bytes(), message="new log file")
    size = rotated.stat().st_size
    wait_for(lambda: log.read_bytes().count(b"tick") >= 3, message="more ticks")
    assert rotated.stat().st_size == size


def test_created_container_stats_and_bad_input(runtime: Runtime, tmp_path: Path) -> None:
    r = runtime
    sid, pcfg = run_pod(r, tmp_path, "bad")
    cid = create(r, sid, pcfg, container_config("c", ["sleep", "1000"]))
    stats = r.rt.ListContainerStats(api_pb2.ListContainerStatsRequest()).stats
    assert [s.attributes.id for s in stats] == [cid]
    assert stats[0].cpu.timestamp > 0 and stats[0].memory.timestamp > 0
    with pytest.raises(grpc.RpcError) as exc:
        create(r, sid, pcfg, container_config("c", ["sleep", "1000"]))
    assert exc.value.code() == grpc.StatusCode.ALREADY_EXISTS and cid in (exc.value.details() or "")
    with pytest.raises(grpc.RpcError) as exc:
        status(r, "f" * 64)
    assert exc.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as exc:
        create(
            r,
            sid,
            pcfg,
            container_config("g", ["id"], linux=sec(run_as_group=api_pb2.Int64Value(value=5))),
        )
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    dev = api_pb2.Device(container_path="/dev/mynull", host_path="/dev/null", permissions="rwm")
    cdev = started(r, sid, pcfg, container_config("dev", ["sleep", "1000"], devices=[dev]))
    assert (
        exec_sync(
            r, cdev, ["sh", "-c", "[ -c /dev/mynull ] && echo x > /dev/mynull && echo ok"]
        ).stdout
        == b"ok\n"
    )
    with pytest.raises(grpc.RpcError) as exc:
        create(r, sid, pcfg, container_config("baddev", ["true"], devices=[
            api_pb2.Device(container_path="/dev/x", host_path="/etc/hostname")]))  # fmt: skip
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    # a failed create leaves nothing behind
    before = sorted(p.name for p in (r.root / "containers").iterdir())
    bad_mount = api_pb2.Mount(container_path="/data", host_path=str(tmp_path / "missing"))
    with pytest.raises(grpc.RpcError) as exc:
        create(r, sid, pcfg, container_config("m", ["true"], mounts=[bad_mount]))
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert sorted(p.name for p in (r.root / "containers").iterdir()) == before
    assert sorted(p.name for p in (r.state / "containers").iterdir()) == before
    for d in cgroup_dirs(r.cgroup_parent):
        if not d.is_dir():
            continue
        assert sorted(p.name for p in d.iterdir() if p.is_dir()) == sorted([*before, sid])
    # the name is free again
    create(r, sid, pcfg, container_config("m", ["true"]))
    # a missing command fails StartContainer and leaves the container exited
    cid3 = create(r, sid, pcfg, container_config("nocmd", ["/bin/nope"]))
    with pytest.raises(grpc.RpcError):
        r.rt.StartContainer(api_pb2.StartContainerRequest(container_id=cid3))
    s = status(r, cid3)
    assert s.state == api_pb2.CONTAINER_EXITED and s.reason == "StartError" and "nope" in s.message


def test_runtime_restart_keeps_containers(runtime: Runtime, tmp_path: Path) -> None:
    r = runtime
    sid, pcfg = run_pod(r, tmp_path, "rs")
    cmd = ["sh", "-c", "while true; do echo tick; sleep 0.05; done"]
    keep = started(r, sid, pcfg, container_config("keep", cmd, log_path="keep.log"))
    shared = tmp_path / "shared"
    shared.mkdir()
    mount = api_pb2.Mount(container_path="/shared", host_path=str(shared))
    wait_go = "while [ ! -e /shared/go ]; do sleep 0.05; done; exit 7"
    ends = started(r, sid, pcfg, container_config("ends", ["sh", "-c", wait_go], mounts=[mount]))
    created = create(r, sid, pcfg, container_config("created", ["true"]))
    r.kill()
    # `ends` exits while the runtime is down
    (shared / "go").touch()
    monitor_exit = r.root / "containers" / ends / "exit.json"
    wait_for(monitor_exit.exists, message="exit recorded by the monitor")
    r.start()
    wait_for(lambda: status(r, ends).state == api_pb2.CONTAINER_EXITED, message="ends exited")
    assert status(r, ends).exit_code == 7
    assert status(r, keep).state == api_pb2.CONTAINER_RUNNING
    assert status(r, created).state == api_pb2.CONTAINER_CREATED
    log = Path(pcfg.log_directory) / "keep.log"
    n = log.read_bytes().count(b"tick")
    wait_for(lambda: log.read_bytes().count(b"tick") > n + 2, message="logs continue")
    assert exec_sync(r, keep, ["echo", "-n", "ok"]).stdout == b"ok"
    pods = r.rt.ListPodSandbox(api_pb2.ListPodSandboxRequest()).items
    assert [(p.id, p.state) for p in pods] == [(sid, api_pb2.SANDBOX_READY)]
    r.rt.StartContainer(api_pb2.StartContainerRequest(container_id=created))
    r.rt.StopPodSandbox(api_pb2.StopPodSandboxRequest(pod_sandbox_id=sid))
    r.rt.RemovePodSandbox(api_pb2.RemovePodSandboxRequest(pod_sandbox_id=sid))
    assert not r.rt.ListContainers(api_pb2.ListContainersRequest()).containers
