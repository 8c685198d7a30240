"""The CRI runtimes the lifecycle benchmark drives: skiff's runtime and
containerd, each with its own root, state, socket, CNI bridge network and
cgroup parent, started and stopped (processes by pid, mounts and cgroups
removed).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.host_usage import daemon_cgroup
from bench.oci_archive import IMAGE
from tests.harness.wait import wait_for
from tests.linux.runtime.harness import cgroup_dirs

REPO = Path(__file__).resolve().parents[1]
CNI_BIN = Path("/usr/lib/cni") if Path("/usr/lib/cni/bridge").exists() else Path("/opt/cni/bin")


def cni_conf(dest: Path, name: str, bridge: str, subnet: str, ipam_dir: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "10-bench.conflist").write_text(
        json.dumps(
            {
                "cniVersion": "1.0.0",
                "name": name,
                "plugins": [
                    {
                        "type": "bridge",
                        "bridge": bridge,
                        "isGateway": True,
                        "ipMasq": False,
                        "ipam": {
                            "type": "host-local",
                            "dataDir": str(ipam_dir),
                            "ranges": [[{"subnet": subnet}]],
                        },
                    }
                ],
            }
        )
    )
    return dest


class Target:
    """One runtime under test: how to start it, its socket, its processes."""

    name = ""
    socket: Path
    proc: subprocess.Popen[bytes] | None = None
    cgroup_parent = ""

    def start(self) -> None:
        raise NotImplementedError

    def processes(self) -> list[int]:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError


class Skiff(Target):
    name = "skiff"

    def __init__(self, base: Path, rootfs: Path, cni: Path) -> None:
        self.base = base
        self.rootfs = rootfs
        self.cni = cni
        self.socket = base / "cri.sock"
        self.root = base / "root"
        self.state = base / "state"
        self.cgroup_parent = "/skiff-bench-" + secrets.token_hex(4)

    def start(self) -> None:
        images = self.root / "images"
        images.mkdir(parents=True, exist_ok=True)
        (images / "images.json").write_text(
            json.dumps(
                {
                    IMAGE: {
                        "id": "sha256:" + "ab" * 32,
                        "config": {"config": {"Cmd": ["sleep", "3600"]}},
                        "layers": [str(self.rootfs)],
                    }
                }
            )
        )
        log = open(self.base / "runtime.log", "ab")  # noqa: SIM115 - owned by the process
        with daemon_cgroup(self.cgroup_parent):
            self.proc = self._popen(log)
        log.close()

    def _popen(self, log: Any) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.fakes.image_store",  # skiff runtime with a fake image store
                "--listen",
                f"unix://{self.socket}",
                "--root",
                str(self.root),
                "--state",
                str(self.state),
                "--cgroup-parent",
                self.cgroup_parent,
                "--cni-conf-dir",
                str(self.cni),
                "--cni-bin-dir",
                str(CNI_BIN),
                "--log-level",
                "warning",
            ],
            cwd=REPO,
            stdout=log,
            stderr=log,
        )

    def processes(self) -> list[int]:
        assert self.proc is not None
        pids = [self.proc.pid]
        zyg = self.state / "zygote"
        with contextlib.suppress(Exception):
            import psutil

            pids += [c.pid for c in psutil.Process(self.proc.pid).children() if zyg.exists()]
        for meta in self.root.glob("*/*/meta.json"):
            with contextlib.suppress(OSError, ValueError):
                pid = int(json.loads(meta.read_text()).get("monitor_pid", 0))
                if pid:
                    pids.append(pid)
        return [pids[0], *sorted(set(pids[1:]) - {pids[0]})]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Containerd(Target):
    name = "containerd"

    def __init__(self, base: Path, archive: Path, cni: Path) -> None:
        self.base = base
        self.archive = archive
        self.cni = cni
        self.socket = base / "containerd.sock"
        self.cgroup_parent = "/ctrd-bench-" + secrets.token_hex(4)

    def start(self) -> None:
        cfg = self.base / "config.toml"
        cfg.write_text(
            f"""version = 2
root = "{self.base / "root"}"
state = "{self.base / "state"}"
[grpc]
  address = "{self.socket}"
[ttrpc]
  address = "{self.socket}.ttrpc"
[debug]
  level = "warn"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{IMAGE}"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{self.cni}"
"""
        )
        log = open(self.base / "containerd.log", "ab")  # noqa: SIM115 - owned by the process
        with daemon_cgroup(self.cgroup_parent):
            self.proc = subprocess.Popen(
                ["containerd", "--config", str(cfg)], stdout=log, stderr=log, start_new_session=True
            )
        log.close()
        wait_for(self.socket.exists, timeout=30, message="containerd socket")
        subprocess.run(
            [
                "ctr",
                "--address",
                str(self.socket),
                "-n",
                "k8s.io",
                "images",
                "import",
                str(self.archive),
            ],
            check=True,
            capture_output=True,
        )

    def shims(self) -> list[int]:
        out = []
        for p in Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                cmd = (p / "cmdline").read_bytes().split(b"\0")
                if (
                    cmd
                    and cmd[0].endswith(b"containerd-shim-runc-v2")
                    and str(self.socket).encode() in cmd
                ):
                    out.append(int(p.name))
        return out

    def processes(self) -> list[int]:
        assert self.proc is not None
        return [self.proc.pid, *self.shims()]

    def stop(self) -> None:
        shims = self.shims()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pid in shims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        subprocess.run(
            ["umount", "-R", "-l", str(self.base / "state")], capture_output=True, check=False
        )
        subprocess.run(
            ["umount", "-R", "-l", str(self.base / "root")], capture_output=True, check=False
        )


@contextlib.contextmanager
def bridge_network(base: Path, name: str, subnet: str) -> Iterator[Path]:
    bridge = "skb" + secrets.token_hex(5)
    conf = cni_conf(base / "net.d", name, bridge, subnet, base / "ipam")
    try:
        yield conf
    finally:
        subprocess.run(["ip", "link", "del", bridge], capture_output=True, check=False)


def cleanup_cgroups(parent: str) -> None:
    from tests.harness.cgroup import remove_cgroup_tree

    for d in cgroup_dirs(parent):
        with contextlib.suppress(Exception):
            remove_cgroup_tree(d)


def stop_target(target: Target, base: Path) -> None:
    target.stop()
    if isinstance(target, Skiff):
        # monitors and pause holders outlive the runtime by design
        for pid in target.processes()[1:]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    cleanup_cgroups(target.cgroup_parent)
    subprocess.run(["umount", "-R", "-l", str(base)], capture_output=True, check=False)
