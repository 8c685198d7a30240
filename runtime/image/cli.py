"""`skiff image`: seed or inspect a node's image store without a registry.

    skiff image [--root DIR] import FILE...        OCI layout or docker save archives
    skiff image [--root DIR] export -o FILE REF... an OCI layout archive ("-" = stdout)
    skiff image [--root DIR] ls | rm REF...

`--root` is the runtime's state root (default /var/lib/skiff/runtime); the
images live in `<root>/images`, the same store `skiff runtime` serves, and
the two may run at once (the store's index is shared under a file lock).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

DEFAULT_ROOT = Path("/var/lib/skiff/runtime")


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--root",
        type=Path,
        default=argparse.SUPPRESS,
        help=f"runtime root (default {DEFAULT_ROOT})",
    )
    parser = argparse.ArgumentParser(prog="skiff image", parents=[common])
    sub = parser.add_subparsers(dest="command", required=True)
    imp = sub.add_parser("import", parents=[common], help="import image archives")
    imp.add_argument("files", nargs="+", type=Path)
    exp = sub.add_parser("export", parents=[common], help="export images as an OCI archive")
    exp.add_argument("-o", "--output", required=True, help="archive to write, '-' for stdout")
    exp.add_argument("refs", nargs="+")
    sub.add_parser("ls", parents=[common], help="list images")
    rm = sub.add_parser("rm", parents=[common], help="remove images")
    rm.add_argument("refs", nargs="+")
    return parser


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    root: Path = getattr(args, "root", DEFAULT_ROOT)
    from runtime.errors import RuntimeError_
    from runtime.image import archive
    from runtime.image.store import ImageStore

    try:
        store = ImageStore(root / "images")
        if args.command == "import":
            for path in args.files:
                for rec in archive.import_archive(store, path):
                    names = ", ".join(rec.repo_tags) or "(no name)"
                    print(f"imported {rec.id} {names}")
        elif args.command == "export":
            if args.output == "-":
                archive.export_archive(store, args.refs, sys.stdout.buffer)
            else:
                tmp = Path(args.output + ".tmp")
                try:
                    with open(tmp, "wb") as out:
                        archive.export_archive(store, args.refs, out)
                    tmp.replace(args.output)
                finally:
                    tmp.unlink(missing_ok=True)
        elif args.command == "ls":
            print(f"{'IMAGE ID':<15} {'SIZE':>10}  NAMES")
            for rec in store.images():
                names = ", ".join(rec.repo_tags or rec.repo_digests) or "<none>"
                print(f"{rec.id[7:19]:<15} {rec.size:>10}  {names}")
        elif args.command == "rm":
            for ref in args.refs:
                gone = store.remove(ref)
                print(f"removed {gone.id}" if gone else f"{ref}: not present")
    except RuntimeError_ as exc:
        print(f"skiff image: {exc}", file=sys.stderr)
        return 1
    return 0
