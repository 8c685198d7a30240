"""skiffctl cordon / uncordon: mark nodes (un)schedulable through spec.unschedulable.

`cordon NODE... | -l SELECTOR`. Prints `node/n1 cordoned` (or `already
cordoned`), `node/n1 uncordoned`. Also used by drain.
"""

from __future__ import annotations

import argparse

from controlplane.api import kinds
from controlplane.cli.context import CliError, Context
from controlplane.cli.get import list_all
from controlplane.client.interface import Object


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("nodes", nargs="*", metavar="NODE")
    parser.add_argument("-l", "--selector", default="")


def set_unschedulable(ctx: Context, node: Object, unschedulable: bool) -> str:
    name = str(node["metadata"]["name"])
    word = "cordoned" if unschedulable else "uncordoned"
    if bool((node.get("spec") or {}).get("unschedulable")) == unschedulable:
        return f"node/{name} already {word}"
    value: bool | None = True if unschedulable else None
    ctx.client.patch("Node", name, {"spec": {"unschedulable": value}})
    return f"node/{name} {word}"


def nodes_named(ctx: Context, names: list[str], selector: str) -> list[Object]:
    if names and selector:
        raise CliError("give node names or -l, not both")
    if selector:
        objs, _ = list_all(ctx.client, kinds.by_kind("Node"), None, selector)
        if not objs:
            raise CliError(f"no nodes match {selector!r}")
        return objs
    if not names:
        raise CliError("you must name at least one node (or use -l SELECTOR)")
    return [ctx.client.get("Node", n.removeprefix("node/").removeprefix("nodes/")) for n in names]


def run(ctx: Context) -> int:
    unschedulable = ctx.args.verb == "cordon"
    for node in nodes_named(ctx, ctx.args.nodes, ctx.args.selector):
        ctx.out(set_unschedulable(ctx, node, unschedulable))
    return 0
