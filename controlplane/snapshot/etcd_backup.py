"""etcd snapshots: etcd's Maintenance.Snapshot, and restoring one under skiff's prefix.

`backup` streams etcd's own snapshot (a consistent copy of its whole
database at one revision, with etcd's SHA-256 appended, as `etcdctl
snapshot save` gets it) into a file. skiff does not run the etcd it uses,
so `restore` cannot swap etcd's data directory as k3s does for its embedded
etcd: it has `etcdctl snapshot restore` check and unpack the snapshot into a
temporary directory, reads skiff's keys (under `prefix`) from a throwaway
etcd on that directory (127.0.0.1, its own ports, stopped by its pid), and
replaces every key under `prefix` in the live etcd with them. etcd's
revision only grows: watchers see the change as deletes and puts.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import grpc

from controlplane.snapshot.fileformat import SnapshotError
from controlplane.storage.etcd import _target
from controlplane.storage.interface import prefix_end
from proto.etcd.etcdserverpb import rpc_pb2, rpc_pb2_grpc

ETCD = os.environ.get("SKIFF_ETCD", "/usr/bin/etcd")
ETCDCTL = os.environ.get("SKIFF_ETCDCTL", "/usr/bin/etcdctl")
TXN_OPS = 128  # etcd's default --max-txn-ops
PAGE = 1000


def backup(endpoints: list[str], dest: Path) -> int:
    """Stream etcd's snapshot into `dest`; the revision it was taken at."""
    revision = 0
    try:
        with grpc.insecure_channel(_target(endpoints)) as channel:
            stub = rpc_pb2_grpc.MaintenanceStub(channel)
            status = stub.Status(rpc_pb2.StatusRequest(), timeout=10)
            revision = status.header.revision
            fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as out:
                for part in stub.Snapshot(rpc_pb2.SnapshotRequest(), timeout=600):
                    out.write(part.blob)
    except grpc.RpcError as err:
        dest.unlink(missing_ok=True)
        raise SnapshotError(f"etcd snapshot failed: {err.code()}: {err.details()}") from None
    return revision


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _unpack(payload: Path, workdir: Path, peer: str) -> Path:
    data = workdir / "data"
    proc = subprocess.run(
        [ETCDCTL, "snapshot", "restore", str(payload), "--data-dir", str(data),
         "--name", "skiff-restore", "--initial-cluster", f"skiff-restore={peer}",
         "--initial-advertise-peer-urls", peer],
        env={**os.environ, "ETCDCTL_API": "3"}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        reason = (proc.stderr.strip().splitlines() or ["no reason given"])[-1]
        raise SnapshotError(f"the etcd snapshot does not restore: {reason}")
    return data


def _scan(stub: rpc_pb2_grpc.KVStub, prefix: str) -> Iterator[tuple[bytes, bytes]]:
    key, end = prefix.encode(), prefix_end(prefix).encode()
    while True:
        resp = stub.Range(rpc_pb2.RangeRequest(key=key, range_end=end, limit=PAGE), timeout=30)
        for kv in resp.kvs:
            yield kv.key, kv.value
        if not resp.more or not resp.kvs:
            return
        key = resp.kvs[-1].key + b"\x00"


def _read_keys(data: Path, prefix: str, workdir: Path, peer: str) -> list[tuple[bytes, bytes]]:
    client = f"127.0.0.1:{_free_port()}"
    with (workdir / "etcd.log").open("wb") as log:
        proc = subprocess.Popen(
            [ETCD, "--name", "skiff-restore", "--data-dir", str(data),
             "--listen-client-urls", f"http://{client}", "--advertise-client-urls",
             f"http://{client}", "--listen-peer-urls", peer,
             "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"skiff-restore={peer}"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        with grpc.insecure_channel(client) as channel:
            stub = rpc_pb2_grpc.KVStub(channel)
            while True:
                try:
                    return list(_scan(stub, prefix))
                except grpc.RpcError as err:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise SnapshotError(
                            f"cannot read the etcd snapshot ({err.code()}); see {workdir}/etcd.log"
                        ) from None
                    time.sleep(0.2)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()


def read_snapshot(payload: Path, prefix: str) -> list[tuple[bytes, bytes]]:
    """The (key, value) pairs under `prefix` in an etcd snapshot file."""
    for tool in (ETCD, ETCDCTL):
        if not os.path.exists(tool):
            raise SnapshotError(f"restoring an etcd snapshot needs {tool} (Debian's etcd-server)")
    workdir = Path(tempfile.mkdtemp(prefix="skiff-etcd-restore-"))
    try:
        peer = f"http://127.0.0.1:{_free_port()}"
        data = _unpack(payload, workdir, peer)
        return _read_keys(data, prefix, workdir, peer)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def restore(payload: Path, endpoints: list[str], root: str) -> int:
    """Replace every key under `root` in the live etcd with the snapshot's; how many."""
    prefix = root.rstrip("/") + "/"
    pairs = read_snapshot(payload, prefix)
    try:
        with grpc.insecure_channel(_target(endpoints)) as channel:
            stub = rpc_pb2_grpc.KVStub(channel)
            stub.DeleteRange(
                rpc_pb2.DeleteRangeRequest(
                    key=prefix.encode(), range_end=prefix_end(prefix).encode()
                ),
                timeout=60,
            )
            for i in range(0, len(pairs), TXN_OPS):
                ops = [rpc_pb2.RequestOp(request_put=rpc_pb2.PutRequest(key=k, value=v))
                       for k, v in pairs[i : i + TXN_OPS]]  # fmt: skip
                stub.Txn(rpc_pb2.TxnRequest(success=ops), timeout=60)
    except grpc.RpcError as err:
        raise SnapshotError(
            f"writing the snapshot into etcd failed: {err.code()}: {err.details()}"
        ) from None
    return len(pairs)
