"""skiffctl attach: connect to the stdio of a running container, through its node's agent.

`attach [-i] [-t] [-q] POD|TYPE/NAME [-c CONTAINER]`. The pod, node and
credential are found as `exec` finds them; the agent's
`/attach/<ns>/<pod>/<container>` endpoint is upgraded to SPDY/3.1. As
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
from controlplane.cli.exec import finish, local_io, report_refusal, resolve, use_tty
from controlplane.cli.streamclient import (
    UpgradeRefused,
    command_path,
    run_remote_command,
    upgrade,
)
from proto.streaming.remotecommand import SPDY_PROTOCOLS


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
    path = command_path(
        "attach",
        where.namespace,
        where.name,
        where.container,
        [],
        stdin=args.stdin,
        stdout=True,
        stderr=not tty,
        tty=tty,
    )
    try:
        conn = upgrade(where.address, path, where.token, SPDY_PROTOCOLS)
    except UpgradeRefused as err:
        return report_refusal(ctx, err)
    except OSError as err:
        raise CliError(f"cannot reach the agent at {where.address}: {err}") from None
    if tty and not args.quiet:
        ctx.err("If you don't see a command prompt, try pressing enter.")
    with local_io(ctx, stdin=args.stdin, tty=tty) as io:
        result = run_remote_command(conn, io, tty=tty)
    return finish(ctx, result.exit_code, result.message)
