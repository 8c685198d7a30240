"""`skiff-ipam`: the IPAM plugin executable (host-local's keys and
semantics, see `ipam.py`). It only hands the command to the skeleton."""

from __future__ import annotations

import sys

from runtime.cni import ipam, skel

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class IPAMPlugin:
    """ADD/DEL/CHECK/GC/STATUS of the IPAM plugin."""

    def add(self, args: skel.Args) -> dict[str, Any]:
        return ipam.allocate(args.conf, args.container_id, args.ifname, args.args)

    def delete(self, args: skel.Args) -> None:
        ipam.release(args.conf, args.container_id, args.ifname)

    def check(self, args: skel.Args) -> None:
        ipam.check(args.conf, args.container_id, args.ifname)

    def gc(self, args: skel.Args) -> None:
        ipam.gc(args.conf)

    def status(self, args: skel.Args) -> None:
        ipam.parse_range_sets(args.conf.get("ipam") or {})


def main() -> None:
    sys.exit(skel.run(IPAMPlugin()))


if __name__ == "__main__":
    main()
