"""The `skiff` command: one entry point that hands each subcommand to its part.

`skiff runtime`, `skiff agent`, `skiff controlplane`, `skiff up` and `skiff ctl`
each live in their own package; this module only parses the first word and
imports the chosen part lazily, so that `skiff runtime` never loads the control
plane and the other way round. It is the one module allowed to know all parts.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

# subcommand -> (module, function, one-line help). Each function takes the
# remaining argv and returns an exit code.
SUBCOMMANDS: dict[str, tuple[str, str, str]] = {
    "runtime": ("runtime.main", "main", "serve the CRI runtime on a unix socket"),
    "agent": ("agent.main", "main", "run the node agent"),
    "controlplane": ("controlplane.main", "main", "serve the control plane API"),
    "up": ("agent.up", "main", "run control plane, runtime and agent on this machine"),
    "down": ("agent.down", "main", "remove what a stopped skiff up left on this host"),
    "ctl": ("controlplane.cli.main", "main", "the skiffctl CLI"),
    "image": ("runtime.image.cli", "main", "import or export images for the runtime"),
    "token": ("controlplane.tokencmd", "main", "create, list or delete bootstrap tokens"),
    "user": ("controlplane.usercmd", "main", "write a credential for a user"),
    "snapshot": ("controlplane.snapshot.cli", "main", "save, list, delete or prune snapshots"),
    "certificate": ("controlplane.certcmd", "main", "rotate or check the cluster's certificates"),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skiff",
        description="skiff: a slim Kubernetes for real Linux machines.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_, _, help_text) in SUBCOMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def _load(name: str) -> Callable[[Sequence[str]], int]:
    module_name, func_name, _ = SUBCOMMANDS[name]
    module = importlib.import_module(module_name)
    func: Callable[..., int] = getattr(module, func_name)
    if name == "up":
        # Like k3s server, `skiff up` runs the control plane in its own process
        # (with the agent): the agent package may not import the control plane,
        # so this module, which knows all parts, hands it over.
        return functools.partial(func, controlplane=_embedded_controlplane)
    return func


def _embedded_controlplane(argv: list[str]) -> Any:
    """Start `skiff controlplane ARGV` in this process; its RunningControlPlane."""
    from controlplane import main as controlplane

    try:
        return controlplane.start(controlplane.build_parser().parse_args(argv))
    except controlplane.StartError as err:
        raise RuntimeError(f"controlplane: {err}") from err


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    if not args or args[0] in ("-h", "--help"):
        parser.print_help()
        return 0 if args else 2
    if args[0] not in SUBCOMMANDS:
        parser.print_usage(sys.stderr)
        print(
            f"skiff: error: unknown command {args[0]!r} (choose from {', '.join(SUBCOMMANDS)})",
            file=sys.stderr,
        )
        return 2
    return _load(args[0])(args[1:])


if __name__ == "__main__":
    sys.exit(main())
