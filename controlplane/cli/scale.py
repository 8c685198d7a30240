"""skiffctl scale: set replicas through the scale subresource.

`scale KIND NAME... | TYPE/NAME... --replicas N [--current-replicas M]` for
Deployments, ReplicaSets and StatefulSets (what the HPA uses too). With
--current-replicas the change is made only if the current count matches.
Prints `deployment.apps/web scaled`.
"""

from __future__ import annotations

import argparse

from controlplane.cli import printers
from controlplane.cli.context import CliError, Context
from controlplane.cli.resources import parse_targets


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("resources", nargs="+", metavar="KIND NAME | TYPE/NAME")
    parser.add_argument("--replicas", type=int, required=True)
    parser.add_argument("--current-replicas", type=int, default=-1)


def run(ctx: Context) -> int:
    args = ctx.args
    if args.replicas < 0:
        raise CliError(
            "The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0"
        )
    targets = parse_targets(args.resources, need_name=True)
    for t in targets:
        if not t.info.has_scale:
            raise CliError(f"{t.info.plural} cannot be scaled (no scale subresource)")
    failed = 0
    for t in targets:
        assert t.name is not None
        ns = ctx.namespace
        if args.current_replicas >= 0:
            current = ctx.client.get_scale(t.info.key, t.name, ns)
            have = (current.get("spec") or {}).get("replicas")
            if have != args.current_replicas:
                ctx.err(
                    f"error: Expected replicas to be {args.current_replicas}, was {have} "
                    f"({printers.type_name(t.info, t.name)})"
                )
                failed += 1
                continue
        ctx.client.update_scale(t.info.key, t.name, ns, args.replicas)
        ctx.out(f"{printers.type_name(t.info, t.name)} scaled")
    return 1 if failed else 0
