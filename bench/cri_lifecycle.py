"""CRI lifecycle benchmark: skiff's runtime against containerd (when
installed), both driven through the CRI socket by the same client.

For each runtime: p50/p90/max milliseconds of RunPodSandbox, CreateContainer,
StartContainer, StopContainer, RemoveContainer, StopPodSandbox and
RemovePodSandbox over `--pods` pods (one container each); the time to start
50 pods back to back (sandbox + container); and, with those 50 pods running,
the PSS and RSS of the runtime plus its per-pod processes (skiff: runtime,
monitor zygote, container monitors and pause holders; containerd: containerd
and its shims). Both runtimes get their own temp root/state/socket, a CNI
bridge network (reference plugins) and a temp cgroup parent; everything is
removed afterwards, processes by pid.

Run as root: `.venv/bin/python -m bench.cri_lifecycle [--pods 30] [--no-containerd]`.
Prints a table, then one JSON object of figure -> number as the last line.
Never part of a timed test.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc

from proto.runtime.v1 import api_pb2, api_pb2_grpc
from tests.harness.wait import wait_for
from tests.linux.runtime.harness import build_busybox_rootfs, cgroup_dirs

REPO = Path(__file__).resolve().parents[1]
CNI_BIN = Path("/usr/lib/cni") if Path("/usr/lib/cni/bridge").exists() else Path("/opt/cni/bin")
IMAGE = "docker.io/library/skiffbench:latest"
OPS = [
    "RunPodSandbox",
    "CreateContainer",
    "StartContainer",
    "StopContainer",
    "RemoveContainer",
    "StopPodSandbox",
    "RemovePodSandbox",
]


def pss_rss_kb(pid: int) -> tuple[int, int]:
    pss = rss = 0
    with contextlib.suppress(OSError), open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                pss = int(line.split()[1])
            elif line.startswith("Rss:"):
                rss = int(line.split()[1])
    return pss, rss


def _cpu_root() -> tuple[Path, str] | None:
    """The hierarchy that accounts CPU time, and its name in /proc/self/cgroup
    ("" for the unified one)."""
    root = Path("/sys/fs/cgroup")
    if (root / "cgroup.controllers").exists():
        return root, ""
    if (root / "cpuacct").is_dir():
        return root / "cpuacct", "cpuacct"
    return None


def cpu_usage_s(parent: str) -> float:
    """CPU seconds used so far by everything under the cgroup `parent`: a
    target's daemon (started inside it by `daemon_cgroup`), the processes it
    starts, and the pods. NaN where it cannot be read."""
    found = _cpu_root()
    if found is not None:
        d = found[0] / parent.strip("/")
        with contextlib.suppress(OSError, ValueError):
            if found[1]:
                return int((d / "cpuacct.usage").read_text()) / 1e9
            for line in (d / "cpu.stat").read_text().splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
    return float("nan")


@contextlib.contextmanager
def daemon_cgroup(parent: str) -> Iterator[None]:
    """Run the body (which starts the daemon) with this process in
    `<parent>/daemon` for CPU accounting, then move back. The machine is
    shared, so CPU time says more than wall time about a runtime's cost."""
    found = _cpu_root()
    home = None
    if found is not None:
        root, name = found
        with contextlib.suppress(OSError, ValueError):
            for line in Path("/proc/self/cgroup").read_text().splitlines():
                _, ctrls, path = line.split(":", 2)
                if (name in ctrls.split(",")) if name else ctrls == "":
                    home = root / path.lstrip("/")
    if found is None or home is None:
        yield
        return
    daemon = found[0] / parent.strip("/") / "daemon"
    try:
        daemon.mkdir(parents=True, exist_ok=True)
        (daemon / "cgroup.procs").write_text(str(os.getpid()))
    except OSError:
        yield
        return
    try:
        yield
    finally:
        (home / "cgroup.procs").write_text(str(os.getpid()))


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


def oci_archive(rootfs: Path, dest: Path) -> Path:
    """An OCI image archive of `rootfs` (one uncompressed layer) for ctr."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        for path in sorted(rootfs.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(rootfs)), recursive=False)
    layer_bytes = layer.getvalue()
    layer_digest = "sha256:" + hashlib.sha256(layer_bytes).hexdigest()
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Cmd": ["sleep", "3600"], "Env": ["PATH=/bin"]},
            "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        }
    ).encode()
    config_digest = "sha256:" + hashlib.sha256(config).hexdigest()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": config_digest,
                "size": len(config),
            },
            "layers": [
                {
                    "mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": layer_digest,
                    "size": len(layer_bytes),
                }
            ],
        }
    ).encode()
    manifest_digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    index = json.dumps(
        {
            "schemaVersion": 2,
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": manifest_digest,
                    "size": len(manifest),
                    "annotations": {
                        "io.containerd.image.name": IMAGE,
                        "org.opencontainers.image.ref.name": "latest",
                    },
                }
            ],
        }
    ).encode()
    with tarfile.open(dest, "w") as tar:

        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

        add("oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
        add("index.json", index)
        for digest, data in (
            (layer_digest, layer_bytes),
            (config_digest, config),
            (manifest_digest, manifest),
        ):
            add("blobs/sha256/" + digest.split(":")[1], data)
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
                str(REPO / "skiff.py"),
                "runtime",
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
                "--image-store-factory",
                "tests.fakes.image_store:factory",
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


class Client:
    def __init__(self, socket: Path, cgroup_parent: str, tag: str) -> None:
        self.channel = grpc.insecure_channel(f"unix://{socket}")
        self.rt = api_pb2_grpc.RuntimeServiceStub(self.channel)
        self.cgroup_parent = cgroup_parent
        self.tag = tag
        self.times: dict[str, list[float]] = {op: [] for op in OPS}

    def wait_ready(self) -> None:
        def ok() -> bool:
            with contextlib.suppress(grpc.RpcError):
                self.rt.Version(api_pb2.VersionRequest(), timeout=1)
                return True
            return False

        wait_for(ok, timeout=60, message="runtime to answer")

    def timed(self, op: str, fn: Callable[[], Any]) -> Any:
        t0 = time.perf_counter()
        out = fn()
        self.times[op].append((time.perf_counter() - t0) * 1000)
        return out

    def pod_config(self, i: int) -> api_pb2.PodSandboxConfig:
        return api_pb2.PodSandboxConfig(
            metadata=api_pb2.PodSandboxMetadata(
                name=f"bench-{self.tag}-{i}", uid=secrets.token_hex(8), namespace="bench"
            ),
            hostname=f"bench-{i}",
            linux=api_pb2.LinuxPodSandboxConfig(cgroup_parent=self.cgroup_parent),
        )

    def start_pod(self, i: int, record: bool) -> tuple[str, str]:
        cfg = self.pod_config(i)
        run = lambda: self.rt.RunPodSandbox(api_pb2.RunPodSandboxRequest(config=cfg), timeout=60)  # noqa: E731
        sid = (self.timed("RunPodSandbox", run) if record else run()).pod_sandbox_id
        ccfg = api_pb2.ContainerConfig(
            metadata=api_pb2.ContainerMetadata(name="c"),
            image=api_pb2.ImageSpec(image=IMAGE),
            command=["sleep", "3600"],
        )
        create = lambda: self.rt.CreateContainer(  # noqa: E731
            api_pb2.CreateContainerRequest(pod_sandbox_id=sid, config=ccfg, sandbox_config=cfg),
            timeout=60,
        )
        cid = (self.timed("CreateContainer", create) if record else create()).container_id
        start = lambda: self.rt.StartContainer(  # noqa: E731
            api_pb2.StartContainerRequest(container_id=cid), timeout=60
        )
        self.timed("StartContainer", start) if record else start()
        return sid, cid

    def end_pod(self, sid: str, cid: str, record: bool) -> None:
        calls: list[tuple[str, Callable[[], Any]]] = [
            ("StopContainer", lambda: self.rt.StopContainer(api_pb2.StopContainerRequest(container_id=cid, timeout=10), timeout=60)),
            ("RemoveContainer", lambda: self.rt.RemoveContainer(api_pb2.RemoveContainerRequest(container_id=cid), timeout=60)),
            ("StopPodSandbox", lambda: self.rt.StopPodSandbox(api_pb2.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=60)),
            ("RemovePodSandbox", lambda: self.rt.RemovePodSandbox(api_pb2.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=60)),
        ]  # fmt: skip
        for op, fn in calls:
            self.timed(op, fn) if record else fn()

    def remove_all(self) -> None:
        with contextlib.suppress(grpc.RpcError):
            for p in self.rt.ListPodSandbox(api_pb2.ListPodSandboxRequest(), timeout=30).items:
                self.rt.StopPodSandbox(
                    api_pb2.StopPodSandboxRequest(pod_sandbox_id=p.id), timeout=60
                )
                self.rt.RemovePodSandbox(
                    api_pb2.RemovePodSandboxRequest(pod_sandbox_id=p.id), timeout=60
                )


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def lifecycle(clients: list[Client], pods: int) -> dict[str, float]:
    """Alternate pods between the runtimes, so both see the same load."""
    for c in clients:
        c.end_pod(*c.start_pod(-1, False), False)  # warm-up, not recorded
    for i in range(pods):
        for c in clients:
            c.end_pod(*c.start_pod(i, True), True)
    figures: dict[str, float] = {}
    for c in clients:
        for op in OPS:
            v = c.times[op]
            figures[f"{c.tag}.{op}.p50_ms"] = round(statistics.median(v), 2)
            figures[f"{c.tag}.{op}.p90_ms"] = round(pct(v, 0.9), 2)
            figures[f"{c.tag}.{op}.max_ms"] = round(max(v), 2)
    return figures


def fifty_pods(target: Target, client: Client, running: int) -> dict[str, float]:
    """Start `running` pods back to back, measure memory, remove them."""
    name = target.name
    figures: dict[str, float] = {}
    c0 = cpu_usage_s(target.cgroup_parent)
    t0 = time.perf_counter()
    for i in range(running):
        client.start_pod(1000 + i, False)
    figures[f"{name}.start_{running}_pods_s"] = round(time.perf_counter() - t0, 2)
    figures[f"{name}.start_{running}_pods_cpu_s"] = round(cpu_usage_s(target.cgroup_parent) - c0, 2)
    figures[f"{name}.start_{running}_pods_load1"] = round(os.getloadavg()[0], 1)
    pss = rss = 0
    procs = target.processes()
    for pid in procs:
        p, r = pss_rss_kb(pid)
        pss += p
        rss += r
    main_pss, main_rss = pss_rss_kb(procs[0])
    figures[f"{name}.runtime_pss_mb"] = round(main_pss / 1024, 1)
    figures[f"{name}.runtime_rss_mb"] = round(main_rss / 1024, 1)
    figures[f"{name}.per_pod_pss_mb"] = round((pss - main_pss) / 1024 / max(1, running), 2)
    figures[f"{name}.per_pod_rss_mb"] = round((rss - main_rss) / 1024 / max(1, running), 2)
    figures[f"{name}.total_pss_mb"] = round(pss / 1024, 1)
    figures[f"{name}.processes"] = len(procs)
    client.remove_all()
    return figures


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


def run_all(
    names: list[str], base: Path, rootfs: Path, archive: Path, pods: int, running: int
) -> dict[str, float]:
    figures: dict[str, float] = {}
    with contextlib.ExitStack() as stack:
        targets: list[Target] = []
        for n, name in enumerate(names):
            sub = base / name
            sub.mkdir()
            conf = stack.enter_context(bridge_network(sub, f"bench-{name}", f"10.{200 + n}.0.0/16"))
            target: Target = (
                Skiff(sub, rootfs, conf) if name == "skiff" else Containerd(sub, archive, conf)
            )
            stack.callback(stop_target, target, sub)
            target.start()
            targets.append(target)
        clients = []
        for t in targets:
            c = Client(t.socket, t.cgroup_parent, t.name)
            stack.callback(c.channel.close)
            c.wait_ready()
            clients.append(c)
        figures.update(lifecycle(clients, pods))
        for t, c in zip(targets, clients, strict=True):
            figures.update(fifty_pods(t, c, running))
    return figures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--pods", type=int, default=30)
    ap.add_argument("--running", type=int, default=50)
    ap.add_argument("--no-containerd", action="store_true")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("bench/cri_lifecycle.py needs root", file=sys.stderr)
        return 2
    base = Path(tempfile.mkdtemp(prefix="skiff-bench-"))
    figures: dict[str, float] = {}
    try:
        rootfs = build_busybox_rootfs(base / "rootfs")
        archive = oci_archive(rootfs, base / "image.tar")
        targets = ["skiff"]
        if (
            not args.no_containerd
            and shutil.which("containerd")
            and shutil.which("containerd-shim-runc-v2")
        ):
            targets.append("containerd")
        figures.update(run_all(targets, base, rootfs, archive, args.pods, args.running))
    finally:
        subprocess.run(["umount", "-R", "-l", str(base)], capture_output=True, check=False)
        shutil.rmtree(base, ignore_errors=True)
    names = sorted({k.split(".", 1)[0] for k in figures})
    rows = sorted(
        {k.split(".", 1)[1] for k in figures}, key=lambda r: (r.split(".")[0] not in OPS, r)
    )
    print(f"{'figure':40}" + "".join(f"{n:>14}" for n in names))
    for row in rows:
        print(
            f"{row:40}" + "".join(f"{figures.get(f'{n}.{row}', float('nan')):>14}" for n in names)
        )
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
