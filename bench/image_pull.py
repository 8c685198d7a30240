"""Pull + unpack of a ~100 MB, 10-layer image: skiff against containerd.

Both runtimes are asked over CRI (our runtime.v1 stubs, a unix socket each)
to pull the same images from one local docker-registry on 127.0.0.1, named
`bench.skiff.local/...` and routed to the registry by a mirror (skiff's
registries.yaml with disable_default_endpoint; containerd's hosts.toml with
`server` pointing at the registry), so nothing leaves the machine. Cold pulls
use a different image per round (same size, different random content: layers
never shared between rounds), alternating which runtime goes first; warm
pulls repeat a pull that is already complete. Also measured: unpack alone
(our decompress + extract of local blobs) and plain sequential writes to the
same filesystem, the ceiling for unpacking.

containerd (Debian's, installed but not running) is started here with its own
temporary config, root, state and socket, and stopped by its pid. Skipped if
it is not installed. Prints a table and, as the last line, one JSON object of
figure -> number.

    sudo .venv/bin/python -m bench.image_pull [--rounds 3] [--mib 100] [--layers 10]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path

import grpc

from proto.runtime.v1 import api_pb2, api_pb2_grpc
from runtime.image import build
from runtime.image.content import CHUNK
from runtime.image.registry import PullSettings
from runtime.image.unpack import INFLATE_BACKEND, Extractor, decompressed, unpack_layer
from tests.harness.images import MiB, TestImages
from tests.harness.mounts import unmount_all
from tests.harness.registry import Registry, run_registry, stop_process
from tests.harness.wait import wait_for

MIRRORED_HOST = "bench.skiff.local"
CONTAINERD = shutil.which("containerd")


def containerd_config(base: Path) -> Path:
    cfg = base / "config.toml"
    cfg.write_text(
        f"""version = 2
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
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{base}/cni-bin"
    conf_dir = "{base}/cni-conf"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{base}/certs.d"
"""
    )
    return cfg


@contextmanager
def run_containerd(base: Path, registry: Registry) -> Iterator[grpc.Channel]:
    hosts = base / "certs.d" / MIRRORED_HOST
    hosts.mkdir(parents=True)
    (hosts / "hosts.toml").write_text(
        f'server = "{registry.url}"\n\n[host."{registry.url}"]\n  capabilities = ["pull", "resolve"]\n'
    )
    cfg = containerd_config(base)
    log = open(base / "containerd.log", "wb")  # noqa: SIM115 - closed below
    assert CONTAINERD is not None
    proc = subprocess.Popen(
        [CONTAINERD, "--config", str(cfg)],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    channel = grpc.insecure_channel(f"unix://{base}/containerd.sock")
    stub = api_pb2_grpc.ImageServiceStub(channel)
    try:

        def ready() -> bool:
            if proc.poll() is not None:
                raise RuntimeError((base / "containerd.log").read_text()[-2000:])
            stub.ImageFsInfo(api_pb2.ImageFsInfoRequest(), timeout=1)
            return True

        wait_for(ready, timeout=30, message="containerd CRI to answer")
        yield channel
    finally:
        channel.close()
        stop_process(proc, timeout=20)
        log.close()
        unmount_all(base)


@contextmanager
def run_skiff(base: Path, registry: Registry) -> Iterator[grpc.Channel]:
    registries = base / "registries.yaml"
    registries.write_text(
        f"mirrors:\n  {MIRRORED_HOST}:\n    endpoint: [{registry.url}]\n"
        "disable_default_endpoint: true\n"
    )
    _store, servicer = build(base / "images", registries, False)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    api_pb2_grpc.add_ImageServiceServicer_to_server(servicer, server)
    server.add_insecure_port(f"unix://{base}/skiff.sock")
    server.start()
    channel = grpc.insecure_channel(f"unix://{base}/skiff.sock")
    try:
        yield channel
    finally:
        channel.close()
        server.stop(None).wait(10)


def timed_pull(channel: grpc.Channel, ref: str) -> float:
    stub = api_pb2_grpc.ImageServiceStub(channel)
    start = time.perf_counter()
    stub.PullImage(api_pb2.PullImageRequest(image=api_pb2.ImageSpec(image=ref)), timeout=300)
    return (time.perf_counter() - start) * 1000


def disk_write_mb_s(base: Path, total: int, files: int, sync: bool = False) -> float:
    """Sequential writes of `total` bytes in `files` files (no fsync, like an
    unpack; or each file fsynced, the disk itself)."""
    data = os.urandom(CHUNK)
    target = base / "disk-write"
    target.mkdir()
    start = time.perf_counter()
    for i in range(files):
        fd = os.open(target / f"f{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            for _ in range(total // files // CHUNK):
                os.write(fd, data)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
    elapsed = time.perf_counter() - start
    shutil.rmtree(target)
    return total / MiB / elapsed


def unpack_only_mb_s(
    base: Path, image_layers: list[Path], size: int, how: str = "plain"
) -> tuple[float, float]:
    """Unpack of local blobs: MB/s of wall time and MB per CPU second.

    "plain": decompress + extract, one layer after the other, one thread.
    "pipelined": as a pull of a single layer does it (inflate and the diff
    ID's sha256 in a readahead thread, extraction beside it), one layer after
    the other. "parallel": as a pull of many layers does it (the diff ID's
    sha256 too, `max_concurrent_downloads` layers at a time, one thread each)."""
    target = base / "unpack-only"
    target.mkdir()
    workers = PullSettings().max_concurrent_downloads if how == "parallel" else 1

    def one(i: int, blob: Path) -> None:
        dest = target / str(i)
        dest.mkdir()
        with open(blob, "rb", buffering=0) as f:
            if how == "plain":
                Extractor(dest).extract(decompressed(f))
            else:
                unpack_layer(f, dest, readahead=how == "pipelined")

    cpu = time.process_time()
    start = time.perf_counter()
    if workers == 1:
        for i, blob in enumerate(image_layers):
            one(i, blob)
    else:
        with futures.ThreadPoolExecutor(workers) as pool:
            list(pool.map(one, range(len(image_layers)), image_layers))
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    shutil.rmtree(target)
    return size / MiB / elapsed, size / MiB / cpu


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.image_pull")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mib", type=int, default=100)
    parser.add_argument("--layers", type=int, default=10)
    parser.add_argument("--no-containerd", action="store_true")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("bench.image_pull: run as root (overlay snapshots, chown in unpack)", file=sys.stderr)
        return 2
    use_containerd = CONTAINERD is not None and not args.no_containerd
    total = args.mib * MiB
    base = Path(tempfile.mkdtemp(prefix="skiff-bench-image-"))
    results: dict[str, list[float]] = {
        "skiff_cold": [],
        "containerd_cold": [],
        "skiff_warm": [],
        "containerd_warm": [],
        "skiff_cold_cpu": [],
    }
    try:
        images = TestImages(base / "build")
        built = [images.sized(total, args.layers, seed=100 + i) for i in range(args.rounds)]
        with run_registry() as registry:
            refs = []
            for i, image in enumerate(built):
                pushed = registry.push(image, f"bench/sized-{i}", "v1")
                refs.append(f"{MIRRORED_HOST}/{pushed.repository}:v1")
            load_start = load()
            blobs = [lr.blob.path for lr in built[0].layers]
            disk = disk_write_mb_s(base, total, args.layers)
            disk_sync = disk_write_mb_s(base, total, args.layers, sync=True)
            unpack, unpack_cpu = unpack_only_mb_s(base, blobs, total)
            piped, piped_cpu = unpack_only_mb_s(base, blobs, total, "pipelined")
            as_pull, as_pull_cpu = unpack_only_mb_s(base, blobs, total, "parallel")
            (base / "skiff").mkdir()
            (base / "containerd").mkdir()
            with run_skiff(base / "skiff", registry) as skiff:
                runtimes: dict[str, grpc.Channel] = {"skiff": skiff}
                with (
                    run_containerd(base / "containerd", registry) if use_containerd else _nothing()
                ) as ctrd:
                    if ctrd is not None:
                        runtimes["containerd"] = ctrd
                    order = list(runtimes)
                    for i, ref in enumerate(refs):
                        for name in order if i % 2 == 0 else reversed(order):
                            cpu = time.process_time()
                            results[f"{name}_cold"].append(timed_pull(runtimes[name], ref))
                            if name == "skiff":  # skiff serves from this process
                                results["skiff_cold_cpu"].append((time.process_time() - cpu) * 1000)
                    for _ in range(5):
                        for name in order:
                            results[f"{name}_warm"].append(timed_pull(runtimes[name], refs[-1]))
    finally:
        unmount_all(base)
        shutil.rmtree(base, ignore_errors=True)

    figures: dict[str, float] = {}
    print(
        f"pull + unpack of {args.mib} MiB in {args.layers} layers (gzip), {args.rounds} cold rounds"
    )
    print(
        f"{'runtime':<12} {'cold p50 ms':>12} {'cold min ms':>12} {'warm p50 ms':>12} {'cold MB/s':>10}"
    )
    for name in ("skiff", "containerd"):
        cold, warm = results[f"{name}_cold"], results[f"{name}_warm"]
        if not cold:
            continue
        mbs = args.mib / (median(cold) / 1000)
        print(
            f"{name:<12} {median(cold):>12.0f} {min(cold):>12.0f} {median(warm):>12.1f} {mbs:>10.0f}"
        )
        figures[f"{name}_cold_p50_ms"] = round(median(cold), 1)
        figures[f"{name}_cold_min_ms"] = round(min(cold), 1)
        figures[f"{name}_warm_p50_ms"] = round(median(warm), 2)
        figures[f"{name}_cold_mb_s"] = round(mbs, 1)
    if results["skiff_cold_cpu"]:
        cpu_ms = median(results["skiff_cold_cpu"])
        figures["skiff_cold_cpu_p50_ms"] = round(cpu_ms, 1)
        print(f"skiff cold pull CPU time (this process, p50): {cpu_ms:.0f} ms")
    if results["containerd_cold"]:
        ratio = median(results["skiff_cold"]) / median(results["containerd_cold"])
        figures["cold_ratio_skiff_over_containerd"] = round(ratio, 3)
        print(f"cold pull skiff/containerd: {ratio:.2f}x (target <= 1.2x)")
    print(f"unpack only (decompress + extract, local blobs, {INFLATE_BACKEND}):")
    print(
        f"  one layer at a time, one thread:       {unpack:5.0f} MB/s ({unpack_cpu:.0f} MB per CPU s)"
    )
    print(
        f"  + diff-ID sha256, inflate in a thread: {piped:5.0f} MB/s ({piped_cpu:.0f} MB per CPU s)"
    )
    print(
        f"  + diff-ID sha256, 3 layers at a time:  {as_pull:5.0f} MB/s "
        f"({as_pull_cpu:.0f} MB per CPU s)"
    )
    print(f"sequential file writes, same filesystem:          {disk:.0f} MB/s")
    print(f"sequential file writes with fsync (the disk):     {disk_sync:.0f} MB/s")
    print(f"{load_start} at the start, {load()} at the end (2 CPUs)")
    figures["skiff_unpack_only_mb_s"] = round(unpack, 1)
    figures["skiff_unpack_only_mb_per_cpu_s"] = round(unpack_cpu, 1)
    figures["skiff_unpack_pipelined_mb_s"] = round(piped, 1)
    figures["skiff_unpack_pipelined_mb_per_cpu_s"] = round(piped_cpu, 1)
    figures["skiff_unpack_as_pull_mb_s"] = round(as_pull, 1)
    figures["skiff_unpack_as_pull_mb_per_cpu_s"] = round(as_pull_cpu, 1)
    figures["disk_write_mb_s"] = round(disk, 1)
    figures["disk_write_fsync_mb_s"] = round(disk_sync, 1)
    figures["load_1min_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(figures))
    return 0


@contextmanager
def _nothing() -> Iterator[None]:
    yield None


if __name__ == "__main__":
    sys.exit(main())
