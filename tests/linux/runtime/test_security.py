"""Users and groups, capabilities, privileged, no_new_privs, masked and
read-only paths, read-only rootfs, sysctls and mount propagation, through
the real socket."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import grpc
import pytest

from proto.runtime.v1 import api_pb2
from tests.harness.wait import wait_for
from tests.linux.runtime.harness import Runtime, container_config
from tests.linux.runtime.test_containers import sec, started
from tests.linux.runtime.test_lifecycle import create, exec_sync, run_pod, status

pytestmark = pytest.mark.root


def out(r: Runtime, cid: str, *cmd: str) -> str:
    res = exec_sync(r, cid, list(cmd))
    return str(res.stdout.decode() + res.stderr.decode())


def cap_eff(r: Runtime, cid: str) -> int:
    for line in out(r, cid, "cat", "/proc/self/status").splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    raise AssertionError("no CapEff")


def test_users_and_groups(runtime: Runtime, tmp_path: Path, busybox_rootfs: Path) -> None:
    r = runtime
    r.add_image("user-uid-group:1", [busybox_rootfs], {"User": "1003:1004"})
    r.add_image("user-name:1", [busybox_rootfs], {"User": "www-data"})
    r.add_image("predefined-group:1", [busybox_rootfs], {"User": "1000"})
    sid, pcfg = run_pod(r, tmp_path, "users")
    sleep = ["sleep", "1000"]
    c = started(r, sid, pcfg, container_config("a", sleep, linux=sec(run_as_username="nobody")))
    assert out(r, c, "id", "-u") == "65534\n"
    c = started(
        r, sid, pcfg,
        container_config("b", sleep, linux=sec(run_as_user=api_pb2.Int64Value(value=1001),
                                               run_as_group=api_pb2.Int64Value(value=1002))),
    )  # fmt: skip
    assert out(r, c, "sh", "-c", "echo $(id -u):$(id -g)") == "1001:1002\n"
    cfg = container_config("c", sleep)
    cfg.image.image = "user-uid-group:1"
    c = started(r, sid, pcfg, cfg)
    assert out(r, c, "sh", "-c", "echo $(id -u):$(id -g)") == "1003:1004\n"
    cfg = container_config("d", sleep)
    cfg.image.image = "user-name:1"
    c = started(r, sid, pcfg, cfg)
    assert out(r, c, "id", "-un") == "www-data\n"
    cfg = container_config(
        "e", ["sh", "-c", "id -G; exec sleep 1000"], linux=sec(supplemental_groups=[1234])
    )
    cfg.image.image = "predefined-group:1"
    cfg.log_path = "e.log"
    c = started(r, sid, pcfg, cfg)
    assert out(r, c, "id", "-G") == "1000 1234 50000\n"
    user = status(r, c).user.linux
    assert (user.uid, user.gid, sorted(user.supplemental_groups)) == (1000, 1000, [1234, 50000])
    log = Path(pcfg.log_directory) / "e.log"
    wait_for(
        lambda: log.exists() and b"F 1000 1234 50000" in log.read_bytes(), message="init id -G"
    )
    with pytest.raises(grpc.RpcError) as exc:
        create(r, sid, pcfg, container_config("f", sleep, linux=sec(run_as_username="nosuchuser")))
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_capabilities_privileged_nnp(runtime: Runtime, tmp_path: Path) -> None:
    r = runtime
    sid, pcfg = run_pod(r, tmp_path, "caps")
    sleep = ["sleep", "1000"]
    default = cap_eff(r, started(r, sid, pcfg, container_config("def", sleep)))
    NET_ADMIN, NET_RAW, SYS_ADMIN = 1 << 12, 1 << 13, 1 << 21
    assert default & NET_RAW and not default & NET_ADMIN and not default & SYS_ADMIN
    c = started(r, sid, pcfg, container_config("add", sleep, linux=sec(
        capabilities=api_pb2.Capability(add_capabilities=["NET_ADMIN"], drop_capabilities=["NET_RAW"]))))  # fmt: skip
    eff = cap_eff(r, c)
    assert eff & NET_ADMIN and not eff & NET_RAW
    c = started(r, sid, pcfg, container_config("none", sleep, linux=sec(
        capabilities=api_pb2.Capability(drop_capabilities=["ALL"]))))  # fmt: skip
    assert cap_eff(r, c) == 0
    c = started(r, sid, pcfg, container_config("all", sleep, linux=sec(
        capabilities=api_pb2.Capability(add_capabilities=["ALL"]))))  # fmt: skip
    assert cap_eff(r, c) & SYS_ADMIN
    c = started(r, sid, pcfg, container_config("priv", sleep, linux=sec(privileged=True)))
    assert cap_eff(r, c) & SYS_ADMIN
    assert "rw" in out(r, c, "sh", "-c", "grep ' /sys ' /proc/mounts").split()[3].split(",")
    # the devices cgroup: mknod works (CAP_MKNOD), opening a disk does not
    mk = "mknod /tmp/mem c 1 1 && (head -c1 /tmp/mem >/dev/null 2>&1 && echo opened || echo denied)"
    c = started(r, sid, pcfg, container_config("dev", sleep))
    if (Path("/sys/fs/cgroup/devices")).is_dir():
        assert out(r, c, "sh", "-c", mk) == "denied\n"
    c = started(r, sid, pcfg, container_config("nnp", sleep, linux=sec(no_new_privs=True)))
    assert "NoNewPrivs:\t1" in out(r, c, "cat", "/proc/self/status")


def test_masked_readonly_paths_and_rootfs(runtime: Runtime, tmp_path: Path) -> None:
    r = runtime
    sid, pcfg = run_pod(r, tmp_path, "paths")
    c = started(r, sid, pcfg, container_config("m", ["sleep", "1000"], linux=sec(
        masked_paths=["/bin/ls"], readonly_paths=["/tmp"])))  # fmt: skip
    # (busybox-static's sh runs applets without exec, so check the mount)
    assert out(r, c, "sh", "-c", "[ -c /bin/ls ] && echo masked") == "masked\n"
    assert exec_sync(r, c, ["touch", "/tmp/x"]).exit_code != 0
    assert exec_sync(r, c, ["touch", "/x"]).exit_code == 0
    # default masked paths apply when none are given
    c = started(r, sid, pcfg, container_config("d", ["sleep", "1000"]))
    assert out(r, c, "cat", "/proc/timer_list") == ""
    assert exec_sync(r, c, ["sh", "-c", "echo 1 > /proc/sysrq-trigger"]).exit_code != 0
    c = started(
        r, sid, pcfg, container_config("ro", ["sleep", "1000"], linux=sec(readonly_rootfs=True))
    )
    assert exec_sync(r, c, ["touch", "/x"]).exit_code != 0
    assert exec_sync(r, c, ["touch", "/dev/shm/x"]).exit_code == 0


def test_sysctls_and_namespaces(runtime: Runtime, tmp_path: Path) -> None:
    r = runtime
    linux = api_pb2.LinuxPodSandboxConfig(
        sysctls={"kernel.shm_rmid_forced": "1", "fs.mqueue.msg_max": "100"}
    )
    sid, pcfg = run_pod(r, tmp_path, "sysctl", linux=linux)
    c = started(r, sid, pcfg, container_config("c", ["sleep", "1000"]))
    assert out(r, c, "cat", "/proc/sys/kernel/shm_rmid_forced") == "1\n"
    assert out(r, c, "cat", "/proc/sys/fs/mqueue/msg_max") == "100\n"
    # the pod's shared PID namespace: pid 1 is the sandbox's, not ours
    assert "sleep" not in out(r, c, "cat", "/proc/1/cmdline")
    with pytest.raises(grpc.RpcError) as exc:
        run_pod(
            r, tmp_path, "bad", linux=api_pb2.LinuxPodSandboxConfig(sysctls={"vm.swappiness": "1"})
        )
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    host = api_pb2.LinuxPodSandboxConfig(security_context=api_pb2.LinuxSandboxSecurityContext(
        namespace_options=api_pb2.NamespaceOption(network=api_pb2.NODE, pid=api_pb2.NODE, ipc=api_pb2.NODE)))  # fmt: skip
    hsid, hcfg = run_pod(r, tmp_path, "hostnet", linux=host)
    hc = started(r, hsid, hcfg, container_config("h", ["sleep", "1000"], linux=sec(
        namespace_options=api_pb2.NamespaceOption(network=api_pb2.NODE, pid=api_pb2.NODE, ipc=api_pb2.NODE))))  # fmt: skip
    # (other tests add host links concurrently: compare namespaces, not counts)
    host_net = os.readlink("/proc/self/ns/net")
    assert out(r, hc, "readlink", "/proc/self/ns/net").strip() == host_net
    assert out(r, c, "readlink", "/proc/self/ns/net").strip() != host_net
    assert out(r, c, "sh", "-c", "ip -o link | wc -l").strip() == "1"


def test_mount_propagation(runtime: Runtime, tmp_path: Path) -> None:
    r = runtime
    src = tmp_path / "prop"
    src.mkdir()
    subprocess.run(["mount", "--bind", str(src), str(src)], check=True)
    subprocess.run(["mount", "--make-shared", str(src)], check=True)
    try:
        sid, pcfg = run_pod(r, tmp_path, "prop")
        mounts = [
            api_pb2.Mount(container_path="/private", host_path=str(src)),
            api_pb2.Mount(
                container_path="/slave",
                host_path=str(src),
                propagation=api_pb2.PROPAGATION_HOST_TO_CONTAINER,
            ),
        ]
        c = started(r, sid, pcfg, container_config("c", ["sleep", "1000"], mounts=mounts))
        (src / "sub").mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(src / "sub")], check=True)
        (src / "sub" / "marker").write_text("x")
        assert out(r, c, "ls", "/slave/sub") == "marker\n"
        assert out(r, c, "ls", "/private/sub") == ""
        # rshared (privileged): mounts made in the container reach the host
        shared = api_pb2.Mount(
            container_path="/shared",
            host_path=str(src),
            propagation=api_pb2.PROPAGATION_BIDIRECTIONAL,
        )
        c2 = started(r, sid, pcfg, container_config("c2", ["sleep", "1000"], mounts=[shared],
                                                    linux=sec(privileged=True)))  # fmt: skip
        (src / "back").mkdir()
        assert exec_sync(r, c2, ["mount", "-t", "tmpfs", "tmpfs", "/shared/back"]).exit_code == 0
        exec_sync(r, c2, ["touch", "/shared/back/from-container"])
        assert (src / "back" / "from-container").exists()
        assert out(r, c2, "ls", "/shared/sub") == "marker\n"
    finally:
        subprocess.run(["umount", "-R", "-l", str(src)], check=False)


def test_hostile_image_paths_stay_inside(
    runtime: Runtime, tmp_path: Path, busybox_rootfs: Path
) -> None:
    r = runtime
    evil = tmp_path / "evil-layer"
    (evil / "etc").mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("host file\n")
    # the image's /etc/hosts and a mount target point outside the rootfs
    (evil / "etc" / "hosts").symlink_to(f"../../../../../../..{victim}")
    (evil / "data").symlink_to(str(tmp_path))
    r.add_image("evil:1", [busybox_rootfs, evil])
    sid, pcfg = run_pod(r, tmp_path, "evil")
    src = tmp_path / "mnt-src"
    src.mkdir()
    (src / "inside").write_text("x")
    cfg = container_config("c", ["sleep", "1000"], mounts=[
        api_pb2.Mount(container_path="/data/sub", host_path=str(src))])  # fmt: skip
    cfg.image.image = "evil:1"
    c = started(r, sid, pcfg, cfg)
    assert "127.0.0.1" in out(r, c, "cat", "/etc/hosts")
    assert out(r, c, "ls", "/data/sub") == "inside\n"
    assert victim.read_text() == "host file\n"
    assert not (tmp_path / "sub").exists()
