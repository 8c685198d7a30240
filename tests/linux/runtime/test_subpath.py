"""The subPath escape of issue 17 (the CVE-2017-1002101 class), in real
containers: one container plants `ln -s / /vol/x` in a shared volume; a
later container mounting the volume with `subPath: x` must not get the
host's `/`. And mount targets resolve inside the container's root."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent.pod_config import ConfigError
from agent.volumes import container_mounts, teardown_volumes
from proto.runtime.v1 import api_pb2
from tests.harness.wait import wait_for
from tests.linux.runtime.harness import Runtime, container_config
from tests.linux.runtime.test_containers import started
from tests.linux.runtime.test_lifecycle import exec_sync, run_pod, status

pytestmark = pytest.mark.root


def plant(r: Runtime, sid: str, pcfg: api_pb2.PodSandboxConfig, vol: Path, script: str) -> None:
    """Run `script` in a container with the volume at /vol, to its end."""
    cfg = container_config("init", ["sh", "-c", script])
    cfg.mounts.append(api_pb2.Mount(container_path="/vol", host_path=str(vol)))
    cid = started(r, sid, pcfg, cfg)
    wait_for(lambda: status(r, cid).state == api_pb2.CONTAINER_EXITED, timeout=20)
    assert status(r, cid).exit_code == 0


def test_subpath_symlink_to_host_root_refused(runtime: Runtime, tmp_path: Path) -> None:
    r = runtime
    agent_root = tmp_path / "agent"
    vol = agent_root / "pods" / "u1" / "volumes" / "kubernetes.io~empty-dir" / "v"
    vol.mkdir(parents=True)
    host_secret = tmp_path / "host-secret"
    host_secret.write_text("host only\n")
    sid, pcfg = run_pod(r, tmp_path, "sub")
    plant(r, sid, pcfg, vol, "ln -s / /vol/x && mkdir -p /vol/data/in && ln -s data /vol/ok")
    subpaths = agent_root / "pods" / "u1" / "volume-subpaths"
    try:
        # the escape: `x` leads to the host's /
        def spec(sub: str) -> dict[str, Any]:
            return {
                "name": "app",
                "volumeMounts": [{"name": "v", "mountPath": "/m", "subPath": sub}],
            }

        with pytest.raises(ConfigError, match="outside its volume"):
            container_mounts(spec("x"), {"v": str(vol)}, subpaths)
        # nested: x/<host path>
        with pytest.raises(ConfigError, match="outside its volume"):
            container_mounts(spec("x/etc"), {"v": str(vol)}, subpaths)
        # a symlink that stays inside the volume is fine, and bound from an
        # agent-owned directory nothing in the container can change
        mounts = container_mounts(spec("ok"), {"v": str(vol)}, subpaths)
        assert mounts[0].host_path == str(subpaths / "v" / "app" / "0")
        cfg = container_config("app", ["sleep", "1000"])
        cfg.mounts.extend(mounts)
        cid = started(r, sid, pcfg, cfg)
        res = exec_sync(r, cid, ["ls", "/m"])
        assert res.stdout.decode().split() == ["in"]
        assert exec_sync(r, cid, ["cat", f"/m{host_secret}"]).exit_code != 0
        # a subPath that does not exist yet is made inside the volume
        container_mounts(spec("made/here"), {"v": str(vol)}, subpaths)
        assert (vol / "made" / "here").is_dir()
    finally:
        teardown_volumes(agent_root, "u1")
    assert not (agent_root / "pods" / "u1").exists()


def test_mount_target_through_symlink_stays_in_root(
    runtime: Runtime, tmp_path: Path, busybox_rootfs: Path
) -> None:
    """An image (or an earlier mount) with a symlink on a mount target's
    path: the mount lands inside the container's root, never on the host."""
    r = runtime
    layer = tmp_path / "evil-layer"
    (layer / "target").mkdir(parents=True)
    (layer / "escape").symlink_to(str(tmp_path / "host-dir"))
    (tmp_path / "host-dir").mkdir()
    r.add_image("evil:1", [busybox_rootfs, layer])
    src = tmp_path / "src"
    src.mkdir()
    (src / "payload").write_text("x")
    sid, pcfg = run_pod(r, tmp_path, "tgt")
    cfg = container_config("c", ["sleep", "1000"])
    cfg.image.image = "evil:1"
    cfg.mounts.append(api_pb2.Mount(container_path="/escape/sub", host_path=str(src)))
    cid = started(r, sid, pcfg, cfg)
    assert exec_sync(r, cid, ["cat", "/escape/sub/payload"]).stdout == b"x"
    # made inside the root (under its own /tmp/...), not in the host's dir
    assert not (tmp_path / "host-dir" / "sub").exists()
    mounts = subprocess.run(["cat", "/proc/self/mountinfo"], capture_output=True, text=True)
    assert str(tmp_path / "host-dir") not in mounts.stdout
