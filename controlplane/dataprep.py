"""What `skiff controlplane` does to its data directory before and after opening the store.

`claim`: take the directory's lock (a second control plane, or a restore,
on a directory in use is refused), restore a snapshot with --cluster-reset,
and read the directory's version record (refusing a newer storage format).
`settle`: once the store is open, migrate an older format's objects and
record this skiff's version.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from pathlib import Path

from controlplane.apiserver.tls import Pki
from controlplane.datadir import (
    STORAGE_FORMAT,
    DataDirError,
    DataDirLock,
    Version,
    check_version,
    write_version,
)
from controlplane.storage.interface import Store


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--cluster-reset",
        action="store_true",
        help="restore the snapshot named by --cluster-reset-restore-path before starting "
        "(k3s' flag); refused while another control plane runs on --data-dir",
    )
    p.add_argument(
        "--cluster-reset-restore-path", "--restore-path",
        dest="cluster_reset_restore_path", default="", metavar="FILE",
        help="the snapshot (`skiff snapshot save`) --cluster-reset restores",
    )  # fmt: skip
    from controlplane.snapshot.schedule import add_flags as schedule_flags

    schedule_flags(p)


def _has_state(args: argparse.Namespace, data_dir: Path) -> bool:
    if getattr(args, "store", "sqlite") == "etcd":
        return (data_dir / "admin.conf").exists()
    return (data_dir / "state.db").exists()


def claim(args: argparse.Namespace, data_dir: Path) -> tuple[DataDirLock, Version | None]:
    """Lock the data directory, restore with --cluster-reset, check its version.

    Raises DataDirError (or SnapshotError) with the reason; the lock is then released."""
    lock = DataDirLock(data_dir)
    lock.acquire()
    try:
        if getattr(args, "cluster_reset", False):
            restore_path = getattr(args, "cluster_reset_restore_path", "")
            if not restore_path:
                raise DataDirError(
                    "--cluster-reset needs --cluster-reset-restore-path FILE: the snapshot to "
                    "restore (skiff keeps no cluster membership to reset)"
                )
            from controlplane.snapshot.catalog import Source
            from controlplane.snapshot.restore import cluster_reset

            endpoints = tuple(e for e in args.etcd_endpoints.split(",") if e.strip())
            source = Source(args.store, data_dir, endpoints)
            cluster_reset(source, Path(restore_path), args.etcd_prefix)
        found = check_version(data_dir, _has_state(args, data_dir))
        if not getattr(args, "disable_snapshots", True):
            from controlplane.snapshot.schedule import check_flags

            check_flags(args)
    except BaseException:
        lock.release()
        raise
    return lock, found


def settle(store: Store, data_dir: Path, found: Version | None) -> int:
    """Migrate an older format and record this skiff's version; objects rewritten."""
    rewritten = 0
    if found is not None and found.storage_format < STORAGE_FORMAT:
        from controlplane.migrate import migrate

        rewritten = migrate(store, found.storage_format)
    write_version(data_dir)
    return rewritten


def open_data_dir(
    args: argparse.Namespace,
    data_dir: Path,
    open_pki: Callable[[], Pki],
    open_store: Callable[[], Store],
) -> tuple[DataDirLock, Pki, Store]:
    """claim, then the PKI (rotated when near expiry) and the store, then settle;
    on any failure nothing stays locked or open. Raises DataDirError with the reason."""
    from controlplane.snapshot.fileformat import SnapshotError

    try:
        lock, found = claim(args, data_dir)
    except SnapshotError as err:
        raise DataDirError(f"--cluster-reset: {err}") from err
    try:
        pki = open_pki()
        store = open_store()
        try:
            settle(store, data_dir, found)
        except BaseException:
            store.close()
            raise
    except BaseException:
        lock.release()
        raise
    return lock, pki, store


def start_snapshots(args: argparse.Namespace, data_dir: Path, stop: threading.Event) -> None:
    """Scheduled snapshots until `stop` (checked with the other flags at start)."""
    from controlplane.snapshot.schedule import from_args

    scheduled = from_args(args, data_dir)
    if scheduled is not None:
        scheduled.start(stop)
