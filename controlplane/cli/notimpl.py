"""Verbs whose machinery arrives with later issues (logs, exec, top, rollout, ...).

They accept any arguments, say they are not implemented yet and exit 3, so
scripts can tell "not built" from "failed". Replace the entry in
`main.VERBS` when the real module lands.
"""

from __future__ import annotations

import argparse

from controlplane.cli.context import Context

NOT_IMPLEMENTED_EXIT = 3


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)


def run(ctx: Context) -> int:
    ctx.err(f"skiffctl {ctx.args.verb}: not implemented yet")
    return NOT_IMPLEMENTED_EXIT
