"""Running a real `skiff runtime` for a test: temp --listen/--root/--state,
a temp cgroup parent, a busybox rootfs image, a gRPC client through the real
socket, and a teardown that removes every process (by pid), mount and cgroup
the runtime made, even when the test failed."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from proto.runtime.v1 import api_pb2, api_pb2_grpc
from tests.harness.cgroup import remove_cgroup_tree
from tests.harness.mounts import unmount_all
from tests.harness.wait import wait_for

REPO = Path(__file__).resolve().parents[3]
CGROUP_ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = (
    "cpu",
    "cpuacct",
    "memory",
    "pids",
    "cpuset",
    "hugetlb",
    "blkio",
    "devices",
    "freezer",
)

PASSWD = """root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
default-user:x:1000:1000:default:/home/default:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
"""
GROUP = """root:x:0:
daemon:x:1:
www-data:x:33:
default-user:x:1000:
group-defined-in-image:x:50000:default-user
nogroup:x:65534:
"""


def build_busybox_rootfs(dest: Path) -> Path:
    """A minimal image rootfs: static busybox with hard-linked applets."""
    (dest / "bin").mkdir(parents=True, exist_ok=True)
    bb = dest / "bin" / "busybox"
    shutil.copy("/usr/bin/busybox", bb)
    applets = subprocess.run([str(bb), "--list"], capture_output=True, text=True, check=True).stdout
    for name in applets.split():
        link = dest / "bin" / name
        if not link.exists():
            os.link(bb, link)
    for d in ("etc", "tmp", "root", "var/run", "home/default"):
        (dest / d).mkdir(parents=True, exist_ok=True)
    (dest / "tmp").chmod(0o1777)
    (dest / "etc" / "passwd").write_text(PASSWD)
    (dest / "etc" / "group").write_text(GROUP)
    return dest


def cgroup_dirs(name: str) -> list[Path]:
    name = name.strip("/")
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        return [CGROUP_ROOT / name]
    return [CGROUP_ROOT / c / name for c in CONTROLLERS if (CGROUP_ROOT / c).is_dir()]


def _alive_pid(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@dataclass
class Runtime:
    base: Path
    root: Path
    state: Path
    socket: Path
    cgroup_parent: str
    images: dict[str, dict[str, Any]]
    proc: subprocess.Popen[bytes] | None = None
    channel: grpc.Channel | None = None
    fake_images: bool = True

    @property
    def rt(self) -> api_pb2_grpc.RuntimeServiceStub:
        assert self.channel is not None
        return api_pb2_grpc.RuntimeServiceStub(self.channel)

    @property
    def img(self) -> api_pb2_grpc.ImageServiceStub:
        assert self.channel is not None
        return api_pb2_grpc.ImageServiceStub(self.channel)

    def add_image(self, ref: str, layers: list[Path], config: dict[str, Any] | None = None) -> None:
        self.images[ref] = {
            "id": "sha256:" + uuid.uuid5(uuid.NAMESPACE_URL, ref).hex * 2,
            "config": {"config": config or {}},
            "layers": [str(p) for p in layers],
        }
        img_root = self.root / "images"
        img_root.mkdir(parents=True, exist_ok=True)
        (img_root / "images.json").write_text(json.dumps(self.images))

    def start(self, *extra: str) -> None:
        log = open(self.base / "runtime.log", "ab")  # noqa: SIM115 - kept for the process
        self.proc = subprocess.Popen(
            [
                sys.executable,
                *(
                    ["-m", "tests.fakes.image_store"]  # skiff runtime with a fake image store
                    if self.fake_images
                    else [str(REPO / "skiff.py"), "runtime"]
                ),
                "--listen",
                f"unix://{self.socket}",
                "--root",
                str(self.root),
                "--state",
                str(self.state),
                "--cgroup-parent",
                self.cgroup_parent,
                "--cni-conf-dir",
                str(self.base / "no-cni"),
                "--log-level",
                "debug",
                *extra,
            ],
            cwd=REPO,
            stdout=log,
            stderr=log,
        )
        log.close()

        def listening() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"runtime exited: {self.log_tail()}")
            return self.socket.is_socket()

        # connect only once the socket exists: a refused first connect puts
        # the gRPC channel into reconnect backoff (about a second)
        wait_for(listening, timeout=30, message="runtime socket")
        self.channel = grpc.insecure_channel(f"unix://{self.socket}")
        stub = self.rt

        def ready() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"runtime exited: {self.log_tail()}")
            with contextlib.suppress(grpc.RpcError):
                stub.Version(api_pb2.VersionRequest(), timeout=1)
                return True
            return False

        wait_for(ready, timeout=30, message="runtime to answer Version")

    def kill(self) -> None:
        """kill -9 the runtime (containers' monitors live on)."""
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            # a stale socket would make the next start's client connect too early
            self.socket.unlink(missing_ok=True)
        self.proc = None

    def log_tail(self, n: int = 4000) -> str:
        with contextlib.suppress(OSError):
            return (self.base / "runtime.log").read_bytes()[-n:].decode(errors="replace")
        return ""

    def recorded_pids(self) -> list[int]:
        pids: list[int] = []
        for meta in self.root.glob("*/*/meta.json"):
            with contextlib.suppress(OSError, ValueError):
                d = json.loads(meta.read_text())
                pids += [d.get(k, 0) for k in ("monitor_pid", "pid1", "init_pid")]
        return [p for p in pids if p]

    def cleanup(self) -> None:
        self.kill()
        pids = [p for p in self.recorded_pids() if _alive_pid(p)]
        for d in cgroup_dirs(self.cgroup_parent):
            for p in d.rglob("cgroup.procs"):
                with contextlib.suppress(OSError, ValueError):
                    pids += [int(x) for x in p.read_text().split()]
        for pid in set(pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        wait_for(
            lambda: not any(_alive_pid(p) for p in pids), timeout=10, message="processes to die"
        )
        for d in cgroup_dirs(self.cgroup_parent):
            remove_cgroup_tree(d)
        unmount_all(self.base)
        shutil.rmtree(self.base, ignore_errors=True)


@contextlib.contextmanager
def running_runtime(
    base: Path, rootfs: Path, *extra: str, fake_images: bool = True
) -> Iterator[Runtime]:
    base.mkdir(parents=True, exist_ok=True)
    name = "skiff-test-" + uuid.uuid4().hex[:12]
    r = Runtime(
        base=base,
        root=base / "root",
        state=base / "state",
        socket=base / "cri.sock",
        cgroup_parent="/" + name,
        images={},
        fake_images=fake_images,
    )
    try:
        if fake_images:
            r.add_image("busybox:latest", [rootfs])
        r.start(*extra)
        yield r
    except BaseException:
        sys.stderr.write("--- runtime log ---\n" + r.log_tail() + "\n")
        raise
    finally:
        r.cleanup()


def pod_config(name: str = "pod", **kw: Any) -> api_pb2.PodSandboxConfig:
    cfg = api_pb2.PodSandboxConfig(
        metadata=api_pb2.PodSandboxMetadata(name=name, uid=uuid.uuid4().hex, namespace="default"),
        hostname=kw.pop("hostname", name),
        **kw,
    )
    return cfg


def container_config(name: str, cmd: list[str], **kw: Any) -> api_pb2.ContainerConfig:
    return api_pb2.ContainerConfig(
        metadata=api_pb2.ContainerMetadata(name=name),
        image=api_pb2.ImageSpec(image="busybox:latest"),
        command=cmd,
        **kw,
    )
