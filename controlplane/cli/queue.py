"""skiffctl queue: Volcano queues in the spirit of vcctl.

    skiffctl queue create -N NAME [--weight 1] [--state Open|Closed]
    skiffctl queue list | get -N NAME
    skiffctl queue operate -N NAME --action open|close

operate creates a bus.volcano.sh Command (OpenQueue/CloseQueue) in the
default namespace, as vcctl does; the queue controller carries it out. A
closing or closed queue takes no new Job or PodGroup (admission refuses them
with the reason); what already runs keeps running, and a Closing queue is
Closed once it has finished.
"""

from __future__ import annotations

import argparse

from controlplane.api import kinds, volcano
from controlplane.cli import printers
from controlplane.cli.context import CliError, Context


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("create", "list", "get", "operate"))
    parser.add_argument("-N", "--name", default="", help="the queue's name")
    parser.add_argument("--weight", type=int, default=1)
    parser.add_argument("--state", choices=("Open", "Closed"), default="Open")
    parser.add_argument("-a", "--operation", "--action", dest="operation", default="",
                        choices=("", "open", "close"))  # fmt: skip


def _state(ctx: Context, name: str, state: str) -> None:
    ctx.client.patch("Queue", name, {"status": {"state": state}}, None, "status")


def run(ctx: Context) -> int:
    a = ctx.args
    info = kinds.by_kind("Queue")
    if a.action == "list":
        ctx.out(
            printers.TablePrinter(info, ctx.now()).table(ctx.client.list("Queue").items).rstrip()
        )
        return 0
    if not a.name:
        raise CliError(f"queue {a.action} needs -N NAME")
    if a.action == "get":
        q = ctx.client.get("Queue", a.name)
        ctx.out(printers.TablePrinter(info, ctx.now()).table([q]).rstrip())
        return 0
    if a.action == "create":
        if a.weight <= 0:
            raise CliError("--weight must be a positive integer")
        ctx.client.create(
            "Queue",
            {
                "apiVersion": volcano.SCHEDULING_API,
                "kind": "Queue",
                "metadata": {"name": a.name},
                "spec": {"weight": a.weight, "reclaimable": True},
            },
        )
        if a.state != "Open":
            _state(ctx, a.name, a.state)
        ctx.out(f"queue.scheduling.volcano.sh/{a.name} created")
        return 0
    if not a.operation:
        raise CliError("queue operate needs --action open|close")
    action = "OpenQueue" if a.operation == "open" else "CloseQueue"
    queue = ctx.client.get("Queue", a.name)
    ctx.client.create("Command", volcano.command_for(queue, action, "default"), "default")
    ctx.out(f"queue.scheduling.volcano.sh/{a.name} {action} command created")
    return 0
