"""A private containerd (Debian's package) as a CRI runtime for tests.

`run_containerd(base, ...)` writes a config whose root, state, sockets, opt
dir and registry `config_path` all live under `base`, with the CRI plugin
set up for a CNI conf dir and bin dir the caller gives (put skiff's CNI
launchers there; containerd also needs a `loopback` plugin, linked here
from Debian's /usr/lib/cni), registry mirrors as `hosts.toml` files that
send every pull to a local registry (`server` is the mirror itself, so
nothing ever leaves the machine), and the `sandbox_image` the caller pushed
there. `pause_image()` builds that image with the test image builder from
runtime/linux/pause.py's tiny static ELF.

On exit every pod sandbox is stopped and removed through CRI, containerd is
stopped by its pid (SIGTERM, then SIGKILL), shims it started that are still
alive are killed by pid (found by the unique socket address on their
command line: never by name), and every mount under `base` is undone.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc

from proto.runtime.v1 import api_pb2, api_pb2_grpc
from runtime.linux.pause import CODE_X86_64, elf_x86_64
from tests.harness.images import TestImages
from tests.harness.images.manifest import Image, ImageConfig
from tests.harness.images.tree import Tree
from tests.harness.mounts import unmount_all
from tests.harness.wait import wait_for

CONTAINERD = shutil.which("containerd")
LOOPBACK = Path("/usr/lib/cni/loopback")
PAUSE_REF = "registry.k8s.io/pause:3.9"


def available() -> bool:
    return CONTAINERD is not None and LOOPBACK.exists() and shutil.which("runc") is not None


def pause_image(images: TestImages) -> Image:
    """A pause image without busybox: /pause is the static ELF that loops on
    pause(2), as runtime/linux/pause.py assembles it."""
    tree = Tree().file("pause", elf_x86_64(CODE_X86_64), mode=0o755)
    return images.custom(
        "pause", [tree], ImageConfig(entrypoint=["/pause"], env=()), tag="3.9", base=False
    )


def config_text(base: Path, cni_conf_dir: Path, cni_bin_dir: Path, sandbox_image: str) -> str:
    return f"""version = 2
root = "{base}/root"
state = "{base}/state"
disabled_plugins = ["io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "{base}/containerd.sock"
[ttrpc]
  address = "{base}/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "{base}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  sandbox_image = "{sandbox_image}"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cni_bin_dir}"
    conf_dir = "{cni_conf_dir}"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{base}/certs.d"
"""


def write_mirrors(certs_d: Path, mirrors: Mapping[str, str]) -> None:
    """hosts.toml per mirrored host: `server` is the local registry, so the
    upstream host is never contacted."""
    for host, url in mirrors.items():
        d = certs_d / host
        d.mkdir(parents=True, exist_ok=True)
        (d / "hosts.toml").write_text(
            f'server = "{url}"\n\n[host."{url}"]\n  capabilities = ["pull", "resolve"]\n'
        )


def link_cni_bin(bin_dir: Path) -> None:
    """Make `bin_dir` hold Debian's loopback plugin next to our launchers."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    dest = bin_dir / "loopback"
    if not dest.exists():
        shutil.copy2(LOOPBACK, dest)


@dataclass
class Containerd:
    base: Path
    proc: subprocess.Popen[bytes]

    @property
    def socket(self) -> Path:
        return self.base / "containerd.sock"

    @property
    def endpoint(self) -> str:
        return f"unix://{self.socket}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def log_path(self) -> Path:
        return self.base / "containerd.log"

    def log_tail(self, n: int = 4000) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_bytes()[-n:].decode(errors="replace")
        return ""

    def shim_pids(self) -> list[int]:
        """Live shims this containerd started (their -address is our socket)."""
        needle = str(self.socket).encode()
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].endswith(b"containerd-shim-runc-v2") and needle in argv:
                pids.append(int(entry))
        return pids


def remove_all_pods(endpoint: str, timeout: float = 30.0) -> None:
    """Stop and remove every sandbox (and so every container) over CRI."""
    with grpc.insecure_channel(endpoint) as channel:
        rt = api_pb2_grpc.RuntimeServiceStub(channel)
        with contextlib.suppress(grpc.RpcError):
            for c in rt.ListContainers(api_pb2.ListContainersRequest(), timeout=10).containers:
                with contextlib.suppress(grpc.RpcError):
                    rt.StopContainer(
                        api_pb2.StopContainerRequest(container_id=c.id, timeout=0), timeout=timeout
                    )
                    rt.RemoveContainer(
                        api_pb2.RemoveContainerRequest(container_id=c.id), timeout=timeout
                    )
            for s in rt.ListPodSandbox(api_pb2.ListPodSandboxRequest(), timeout=10).items:
                with contextlib.suppress(grpc.RpcError):
                    rt.StopPodSandbox(
                        api_pb2.StopPodSandboxRequest(pod_sandbox_id=s.id), timeout=timeout
                    )
                    rt.RemovePodSandbox(
                        api_pb2.RemovePodSandboxRequest(pod_sandbox_id=s.id), timeout=timeout
                    )


def stop_pid(proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout)


@contextmanager
def run_containerd(
    base: Path,
    *,
    cni_conf_dir: Path,
    cni_bin_dir: Path,
    mirrors: Mapping[str, str],
    sandbox_image: str = PAUSE_REF,
    extra_env: Sequence[tuple[str, str]] = (),
) -> Iterator[Containerd]:
    """Start containerd under `base` (keep the path short: socket names are
    limited to 107 bytes); see the module docstring."""
    if CONTAINERD is None:
        raise FileNotFoundError("containerd is not installed (apt-get install containerd)")
    base.mkdir(parents=True, exist_ok=True)
    write_mirrors(base / "certs.d", mirrors)
    link_cni_bin(cni_bin_dir)
    cni_conf_dir.mkdir(parents=True, exist_ok=True)
    cfg = base / "config.toml"
    cfg.write_text(config_text(base, cni_conf_dir, cni_bin_dir, sandbox_image))
    env = dict(os.environ)
    env.update(extra_env)
    with open(base / "containerd.log", "ab") as log:
        proc = subprocess.Popen(
            [CONTAINERD, "--config", str(cfg)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
    ctrd = Containerd(base, proc)
    try:
        with grpc.insecure_channel(ctrd.endpoint) as channel:
            stub = api_pb2_grpc.RuntimeServiceStub(channel)

            def ready() -> bool:
                if proc.poll() is not None:
                    raise RuntimeError(f"containerd exited:\n{ctrd.log_tail()}")
                if not ctrd.socket.is_socket():
                    return False
                stub.Version(api_pb2.VersionRequest(), timeout=1)
                return True

            wait_for(ready, timeout=30, message="containerd CRI to answer")
        yield ctrd
    finally:
        try:
            if proc.poll() is None:
                remove_all_pods(ctrd.endpoint)
        finally:
            shims = ctrd.shim_pids()
            stop_pid(proc)
            for pid in shims + ctrd.shim_pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            unmount_all(base)
