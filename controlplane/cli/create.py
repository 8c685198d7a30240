"""skiffctl create: create objects that must not exist yet.

`create -f FILE|DIR|-` creates every object (AlreadyExists is an error for
that object; the others are still created), and `create namespace NAME`
makes a namespace. Prints `deployment.apps/web created`. Use `apply` to
create-or-update.
"""

from __future__ import annotations

import argparse

from controlplane.cli import printers
from controlplane.cli.apply import desired_state
from controlplane.cli.context import CliError, Context
from controlplane.cli.resources import load_manifests, object_namespace
from controlplane.client import errors


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("what", nargs="*", metavar="namespace NAME")
    parser.add_argument("-f", "--filename", action="append", default=[])
    parser.add_argument("-R", "--recursive", action="store_true")


def run(ctx: Context) -> int:
    args = ctx.args
    if args.what:
        if args.filename or len(args.what) != 2 or args.what[0] not in ("namespace", "ns"):
            raise CliError("usage: skiffctl create -f FILE | skiffctl create namespace NAME")
        ctx.client.create(
            "Namespace",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": args.what[1]}},
        )
        ctx.out(f"namespace/{args.what[1]} created")
        return 0
    failed = 0
    for m in load_manifests(args.filename, ctx.stdin, args.recursive):
        ns = object_namespace(m.info, m.obj, args.namespace)
        body = desired_state(m.obj)
        if ns is not None:
            body["metadata"]["namespace"] = ns
        try:
            created = ctx.client.create(m.info.key, body, ns)
        except errors.ApiError as err:
            ctx.err(f'Error from server ({err.reason}): error when creating "{m.source}": {err}')
            failed += 1
            continue
        ctx.out(f"{printers.type_name(m.info, printers.name(created))} created")
    return 1 if failed else 0
