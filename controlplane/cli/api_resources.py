"""skiffctl api-resources: the kinds this cluster serves, from the kind table.

Columns as kubectl: NAME SHORTNAMES APIVERSION NAMESPACED KIND;
`--namespaced=true|false` filters, `-o name` prints `plural.group`. Reads
the compiled-in kind table; no API call.
"""

from __future__ import annotations

import argparse

from controlplane.api import kinds
from controlplane.cli import printers
from controlplane.cli.context import Context


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--namespaced", choices=("true", "false"))
    parser.add_argument("-o", "--output", choices=("name", "wide"))
    parser.add_argument("--no-headers", action="store_true")


def run(ctx: Context) -> int:
    rows = []
    for info in sorted(kinds.all_kinds(), key=lambda k: k.plural):
        if ctx.args.namespaced and (ctx.args.namespaced == "true") != info.namespaced:
            continue
        if ctx.args.output == "name":
            ctx.out(info.resource)
            continue
        rows.append(
            [
                info.plural,
                ",".join(info.short_names),
                info.api_version,
                str(info.namespaced).lower(),
                info.kind,
            ]
        )
    if ctx.args.output != "name":
        ctx.stdout.write(
            printers.format_table(
                ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"],
                rows,
                ctx.args.no_headers,
            )
        )
    return 0
