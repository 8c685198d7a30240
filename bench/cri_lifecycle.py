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
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from bench.cri_targets import Containerd, Skiff, Target, bridge_network, stop_target
from bench.host_usage import cpu_usage_s, pss_rss_kb
from bench.oci_archive import IMAGE, oci_archive
from bench.stats import pctl
from proto.runtime.v1 import api_pb2, api_pb2_grpc
from tests.harness.wait import wait_for
from tests.linux.runtime.harness import build_busybox_rootfs

OPS = [
    "RunPodSandbox",
    "CreateContainer",
    "StartContainer",
    "StopContainer",
    "RemoveContainer",
    "StopPodSandbox",
    "RemovePodSandbox",
]


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
            figures[f"{c.tag}.{op}.p90_ms"] = round(pctl(v, 0.9), 2)
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
