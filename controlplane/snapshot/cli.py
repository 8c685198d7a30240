"""`skiff snapshot save|ls|delete|prune`: k3s' `etcd-snapshot` subcommands.

Run on a control-plane host, with the control plane's --data-dir (and
--store/--etcd-endpoints when it uses etcd). `save` works while the control
plane runs (SQLite's online backup; etcd's snapshot API); restore with
`skiff controlplane --cluster-reset --cluster-reset-restore-path FILE`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from controlplane.snapshot import catalog
from controlplane.snapshot.fileformat import SnapshotError
from machinery import rfc3339

DEFAULT_DATA_DIR = "/var/lib/skiff/controlplane"


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--data-dir", default=DEFAULT_DATA_DIR, help="the control plane's state directory"
    )
    common.add_argument(
        "--dir",
        "--snapshot-dir",
        dest="dir",
        default="",
        help="the snapshot directory (default <data-dir>/snapshots)",
    )
    common.add_argument("--store", choices=("sqlite", "etcd"), default="sqlite")
    common.add_argument(
        "--etcd-endpoints", default="", help="comma-separated etcd client endpoints"
    )
    p = argparse.ArgumentParser(prog="skiff snapshot", description=__doc__)
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    save = sub.add_parser("save", parents=[common], help="take a snapshot now")
    save.add_argument("--name", default=catalog.ON_DEMAND, help="the snapshot's name prefix")
    sub.add_parser("ls", aliases=["list"], parents=[common], help="list snapshots")
    delete = sub.add_parser("delete", parents=[common], help="delete snapshots by name")
    delete.add_argument("names", nargs="+", metavar="NAME")
    prune = sub.add_parser("prune", parents=[common], help="keep only the newest snapshots")
    prune.add_argument("--name", default=catalog.ON_DEMAND, help="the name prefix to prune")
    prune.add_argument("--snapshot-retention", "--etcd-snapshot-retention", dest="retention",
                       type=int, default=catalog.DEFAULT_RETENTION)  # fmt: skip
    return p  # fmt: skip


def _ls(directory: Path) -> str:
    rows = [("Name", "Location", "Size", "Created")]
    for e in catalog.entries(directory):
        rows.append((e.name, e.path.resolve().as_uri(), str(e.size),
                     rfc3339.format_time(e.created)))  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "".join(
        " ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n" for r in rows
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    data_dir = Path(args.data_dir)
    directory = catalog.snapshot_dir(data_dir, args.dir)
    endpoints = tuple(e for e in args.etcd_endpoints.split(",") if e.strip())
    if args.store == "etcd" and not endpoints:
        print("skiff snapshot: --store etcd needs --etcd-endpoints", file=sys.stderr)
        return 2
    try:
        if args.action == "save":
            entry = catalog.save(
                catalog.Source(args.store, data_dir, endpoints), directory, args.name
            )
            print(f"Snapshot {entry.name} saved.")
        elif args.action in ("ls", "list"):
            sys.stdout.write(_ls(directory))
        elif args.action == "delete":
            for name in catalog.delete(directory, args.names):
                print(f"Snapshot {name} deleted.")
        else:
            for name in catalog.prune(directory, args.name, args.retention):
                print(f"Removing local snapshot {directory / name}")
    except (SnapshotError, OSError) as err:
        print(f"skiff snapshot: {err}", file=sys.stderr)
        return 1
    return 0
