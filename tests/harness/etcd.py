"""A real etcd (Debian's /usr/bin/etcd) on 127.0.0.1 random ports, for tests and the bench.

Started in a temporary data directory, waited for with `wait_for` on a real
request, stopped by its pid (never by name) and its directory removed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc

from proto.etcd.etcdserverpb import rpc_pb2, rpc_pb2_grpc
from tests.harness.ports import free_port
from tests.harness.wait import wait_for

ETCD = "/usr/bin/etcd"


@dataclass
class EtcdServer:
    endpoint: str
    proc: subprocess.Popen[bytes]
    data_dir: Path


def etcd_available() -> bool:
    return os.path.exists(ETCD)


def _ready(endpoint: str) -> bool:
    with grpc.insecure_channel(endpoint) as channel:
        stub = rpc_pb2_grpc.KVStub(channel)
        stub.Range(rpc_pb2.RangeRequest(key=b"/", count_only=True), timeout=1)
    return True


@contextmanager
def running_etcd() -> Iterator[EtcdServer]:
    data_dir = Path(tempfile.mkdtemp(prefix="skiff-etcd-"))
    client, peer = free_port(), free_port()
    endpoint = f"127.0.0.1:{client}"
    log = (data_dir / "etcd.log").open("wb")
    proc = subprocess.Popen(
        [
            ETCD,
            "--name", "test",
            "--data-dir", str(data_dir / "data"),
            "--listen-client-urls", f"http://{endpoint}",
            "--advertise-client-urls", f"http://{endpoint}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"test=http://127.0.0.1:{peer}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        wait_for(lambda: proc.poll() is None and _ready(endpoint), timeout=20,
                 message=f"etcd on {endpoint}")  # fmt: skip
        yield EtcdServer(endpoint, proc, data_dir)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()
        shutil.rmtree(data_dir, ignore_errors=True)
