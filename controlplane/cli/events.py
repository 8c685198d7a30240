"""skiffctl events: list events, newest last, as `kubectl events` does.

`events [-n NS | -A] [--for TYPE/NAME] [--types Normal,Warning] [-w]
[-o wide|yaml|json|name]`. Columns: LAST SEEN, TYPE, REASON, OBJECT, MESSAGE
(NAMESPACE first with -A). Sorted by last-seen time.
"""

from __future__ import annotations

import argparse

from controlplane.api import kinds
from controlplane.cli import printers
from controlplane.cli.context import CliError, Context
from controlplane.cli.get import Output, add_output_flags, list_all, scope
from controlplane.cli.resources import parse_targets
from controlplane.client.interface import ListOptions, Object


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-A", "--all-namespaces", action="store_true")
    parser.add_argument("--for", dest="for_", default="", metavar="TYPE/NAME")
    parser.add_argument("--types", default="", help="comma-separated: Normal,Warning")
    parser.add_argument("-w", "--watch", action="store_true")
    add_output_flags(parser)


def _filter(ctx: Context) -> tuple[str, str, set[str]]:
    kind = name = ""
    if ctx.args.for_:
        targets = parse_targets([ctx.args.for_], need_name=True)
        kind, name = targets[0].info.key, str(targets[0].name)
    types = {t.strip() for t in ctx.args.types.split(",") if t.strip()}
    bad = types - {"Normal", "Warning"}
    if bad:
        raise CliError(f"valid --types are Normal and Warning, not {', '.join(sorted(bad))}")
    return kind, name, types


def matches(ev: Object, kind: str, name: str, types: set[str]) -> bool:
    inv = ev.get("involvedObject") or ev.get("regarding") or {}
    if kind and (inv.get("kind") != kind or inv.get("name") != name):
        return False
    return not types or str(ev.get("type") or "Normal") in types


def run(ctx: Context) -> int:
    info = kinds.by_kind("Event")
    kind, name, types = _filter(ctx)
    objs, rv = list_all(ctx.client, info, scope(ctx, info))
    objs = [e for e in objs if matches(e, kind, name, types)]
    objs.sort(key=lambda e: printers.event_time(e) or 0.0)
    output = Output(ctx, info, with_kind=False)
    if objs:
        output.print(objs)
    elif not ctx.args.watch:
        ns = scope(ctx, info)
        ctx.err("No events found" + (f" in {ns} namespace." if ns else "."))
    if not ctx.args.watch:
        return 0
    watch = ctx.client.watch(info.key, scope(ctx, info), ListOptions(resource_version=rv))
    try:
        for event in watch:
            if event.type in ("ADDED", "MODIFIED") and matches(event.object, kind, name, types):
                output.print([event.object])
    finally:
        watch.stop()
    return 0
