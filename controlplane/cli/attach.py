"""skiffctl attach: connect to the stdio of a running container, through the API server.

`attach [-i] [-t] [-q] POD|TYPE/NAME [-c CONTAINER]`. The pod and
credential are found as `exec` finds them; the API server's pods/attach
subresource is upgraded to SPDY/3.1 (the API server relays it to the agent). As
kubectl does, -t is used only when the container was created with `tty`
(else a warning) and stdin is a terminal; with a tty there is no separate
stderr. Detaching (the client going away) leaves the container running.
Exits 0 when the container's output ends, 1 on a failure. This module
never imports the agent or the runtime.
"""

from __future__ import annotations

import argparse
from typing import Any

from controlplane.cli import printers
from controlplane.cli.context import CliError, Context
from controlplane.cli.exec import remote_command, resolve, use_tty


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="POD | TYPE/NAME")
    parser.add_argument("-c", "--container", default="", help="container name")
    parser.add_argument("-i", "--stdin", action="store_true", help="pass stdin to the container")
    parser.add_argument("-t", "--tty", action="store_true", help="stdin is a TTY")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only remote output")


def run(ctx: Context) -> int:
    args = ctx.args
    where = resolve(ctx, args.target, args.container)
    spec: dict[str, Any] = next(
        (
            c
            for c in printers.spec(where.pod).get("containers") or []
            if c.get("name") == where.container
        ),
        {},
    )
    tty = args.tty
    if tty and not spec.get("tty"):
        ctx.err(f"Unable to use a TTY - container {where.container} did not allocate one")
        tty = False
    tty = use_tty(ctx, tty)
    if args.stdin and not spec.get("stdin"):
        raise CliError(f"container {where.container} was not created with stdin: true")
    prompt = (
        "If you don't see a command prompt, try pressing enter." if tty and not args.quiet else ""
    )
    return remote_command(ctx, where, "attach", [], stdin=args.stdin, tty=tty, prompt=prompt)
