"""`skiff-cni`: the CNI plugin executable. It hands the invocation to the
skeleton with bridge mode's handlers and imports nothing else, so that a
command costs little more than starting the interpreter.

One non-CNI use: `skiff-cni reconcile <network config file>` makes the
node's routes to other nodes' pod subnets (the `backend` key) match the
file now, without waiting for the next pod ADD. The agent runs it (in the
node's namespace) after rewriting the config when Nodes change; it cannot
import the runtime, so it runs the executable.
"""

from __future__ import annotations

import sys

from runtime.cni import bridge, skel

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class BridgePlugin:
    """ADD/DEL/CHECK/GC/STATUS of bridge mode (see `bridge.py`)."""

    def add(self, args: skel.Args) -> dict[str, Any]:
        return bridge.add(args)

    def delete(self, args: skel.Args) -> None:
        bridge.delete(args)

    def check(self, args: skel.Args) -> None:
        bridge.check(args)

    def gc(self, args: skel.Args) -> None:
        bridge.gc(args)

    def status(self, args: skel.Args) -> None:
        bridge.status(args)


def reconcile(path: str) -> int:
    """Apply the backend routes of every skiff-cni entry in a config file."""
    from runtime.cni import fastjson, ipam, routes
    from runtime.cni import netlink as nl

    try:
        with open(path, "rb") as f:
            conf = fastjson.loads(f.read())
        if not isinstance(conf, dict):
            raise skel.CNIError(skel.DECODE_FAILURE, f"{path}: not a JSON object")
        entries = conf.get("plugins") if "plugins" in conf else [conf]
        with nl.Netlink() as sock:
            for entry in entries or []:
                if not isinstance(entry, dict) or entry.get("type") != "skiff-cni":
                    continue
                sets = ipam.parse_range_sets(entry.get("ipam") or {})
                local = [r.subnet for rset in sets for r in rset if r.bits == 32]
                routes.reconcile(sock, entry, local)
    except skel.CNIError as exc:
        sys.stdout.write(fastjson.dumps(exc.to_json(skel.LATEST)) + "\n")
        return 1
    except (OSError, ValueError) as exc:
        err = skel.CNIError(skel.IO_FAILURE, f"reconcile {path}: {exc}")
        sys.stdout.write(fastjson.dumps(err.to_json(skel.LATEST)) + "\n")
        return 1
    return 0


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "reconcile":
        sys.exit(reconcile(sys.argv[2]))
    sys.exit(skel.run(BridgePlugin()))


if __name__ == "__main__":
    main()
