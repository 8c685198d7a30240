"""`skiff-cni`: the CNI plugin executable. It hands the invocation to the
skeleton with bridge mode's handlers and imports nothing else, so that a
command costs little more than starting the interpreter."""

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


def main() -> None:
    sys.exit(skel.run(BridgePlugin()))


if __name__ == "__main__":
    main()
