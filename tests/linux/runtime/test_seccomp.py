"""Seccomp through the real socket: unconfined, runtime/default and
docker/default (sethostname refused without SYS_ADMIN), localhost JSON
profiles, refused profile names, and privileged containers unfiltered."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from proto.runtime.v1 import api_pb2
from tests.linux.runtime.harness import Runtime, container_config, running_runtime
from tests.linux.runtime.test_containers import sec, started
from tests.linux.runtime.test_lifecycle import create, exec_sync, run_pod

pytestmark = pytest.mark.root


def seccomp_mode(r: Runtime, cid: str) -> str:
    status = exec_sync(r, cid, ["cat", "/proc/self/status"]).stdout.decode()
    return str(next(line.split()[1] for line in status.splitlines() if line.startswith("Seccomp:")))


@pytest.fixture
def runtime(tmp_path: Path, busybox_rootfs: Path) -> Iterator[Runtime]:
    """A runtime whose localhost seccomp profiles live in the test's dir."""
    with running_runtime(
        tmp_path / "rt", busybox_rootfs, "--seccomp-profile-root", str(tmp_path)
    ) as r:
        yield r


def test_seccomp_profiles(runtime: Runtime, tmp_path: Path) -> None:
    r = runtime
    # a private UTS namespace per pod so sethostname never reaches the host
    sid, pcfg = run_pod(r, tmp_path, "sec")
    sleep = ["sleep", "1000"]
    admin = api_pb2.Capability(add_capabilities=["SYS_ADMIN"])
    c = started(r, sid, pcfg, container_config("unconfined", sleep, linux=sec(
        seccomp_profile_path="unconfined", capabilities=admin)))  # fmt: skip
    assert seccomp_mode(r, c) == "0"
    assert exec_sync(r, c, ["hostname", "h1"]).exit_code == 0
    c = started(
        r,
        sid,
        pcfg,
        container_config("dflt", sleep, linux=sec(seccomp_profile_path="docker/default")),
    )
    assert exec_sync(r, c, ["touch", "/tmp/x"]).exit_code == 0
    assert seccomp_mode(r, c) == "2"
    assert exec_sync(r, c, ["hostname", "h2"]).exit_code != 0
    c = started(r, sid, pcfg, container_config("admin", sleep, linux=sec(
        seccomp_profile_path="runtime/default",
        capabilities=api_pb2.Capability(add_capabilities=["SYS_ADMIN"]))))  # fmt: skip
    assert exec_sync(r, c, ["hostname", "h3"]).exit_code == 0
    profile = tmp_path / "block-chmod.json"
    profile.write_text(json.dumps({
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [{"names": ["chmod", "fchmodat", "fchmodat2", "fchmod"], "action": "SCMP_ACT_ERRNO"}],
    }))  # fmt: skip
    c = started(r, sid, pcfg, container_config("local", sleep, linux=sec(
        seccomp_profile_path=f"localhost/{profile}")))  # fmt: skip
    assert exec_sync(r, c, ["chmod", "777", "/tmp"]).exit_code != 0
    assert exec_sync(r, c, ["touch", "/tmp/ok"]).exit_code == 0
    c = started(r, sid, pcfg, container_config("msg", sleep, linux=sec(
        seccomp=api_pb2.SecurityProfile(profile_type=api_pb2.SecurityProfile.Localhost, localhost_ref=str(profile)))))  # fmt: skip
    assert exec_sync(r, c, ["chmod", "777", "/tmp"]).exit_code != 0
    c = started(r, sid, pcfg, container_config("priv", sleep, linux=sec(
        privileged=True, seccomp_profile_path=f"localhost/{profile}")))  # fmt: skip
    assert seccomp_mode(r, c) == "0"
    with pytest.raises(grpc.RpcError) as exc:
        create(
            r,
            sid,
            pcfg,
            container_config("bad", sleep, linux=sec(seccomp_profile_path=str(profile))),
        )
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    nnp = started(r, sid, pcfg, container_config("nnp", sleep, linux=sec(
        seccomp_profile_path="runtime/default", no_new_privs=True,
        run_as_user=api_pb2.Int64Value(value=1000))))  # fmt: skip
    assert seccomp_mode(r, nnp) == "2"


def test_localhost_profiles_as_containerd_loads_them(runtime: Runtime, tmp_path: Path) -> None:
    """seccomp `localhost/<absolute path>` is loaded as given, as containerd
    does (critest names its profiles so; the agent confines pods' profiles,
    issue 32); a relative one is read under --seccomp-profile-root, never
    through `..` or a symlink out."""
    r = runtime
    sid, pcfg = run_pod(r, tmp_path, "conf")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.json"
    outside.write_text(json.dumps({"defaultAction": "SCMP_ACT_ALLOW"}))
    (tmp_path / "link.json").symlink_to(outside)
    (tmp_path / "ok.json").write_text(json.dumps({"defaultAction": "SCMP_ACT_ALLOW"}))
    sleep = ["sleep", "1000"]
    try:
        for i, ref in enumerate([f"../{outside.name}", "/etc/passwd", "link.json"]):
            with pytest.raises(grpc.RpcError) as exc:
                create(r, sid, pcfg, container_config(f"bad{i}", sleep, linux=sec(
                    seccomp_profile_path=f"localhost/{ref}")))  # fmt: skip
            assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT, ref
        c = started(r, sid, pcfg, container_config("abs", sleep, linux=sec(
            seccomp_profile_path=f"localhost/{outside}")))  # fmt: skip
        assert seccomp_mode(r, c) == "2"
        # relative to the root, as the kubelet's localhostProfile is
        c = started(r, sid, pcfg, container_config("rel", sleep, linux=sec(
            seccomp=api_pb2.SecurityProfile(
                profile_type=api_pb2.SecurityProfile.Localhost, localhost_ref="ok.json"))))  # fmt: skip
        assert seccomp_mode(r, c) == "2"
    finally:
        outside.unlink()


def test_apparmor_refused_without_apparmor(runtime: Runtime, tmp_path: Path) -> None:
    if Path("/sys/module/apparmor/parameters/enabled").exists():
        pytest.skip("this host has AppArmor")
    r = runtime
    sid, pcfg = run_pod(r, tmp_path, "aa")
    profile = api_pb2.SecurityProfile(
        profile_type=api_pb2.SecurityProfile.Localhost, localhost_ref="my-profile"
    )
    with pytest.raises(grpc.RpcError) as exc:
        create(r, sid, pcfg, container_config("aa", ["true"], linux=sec(apparmor=profile)))
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "AppArmor is not enabled" in (exc.value.details() or "")
