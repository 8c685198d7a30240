"""skiffctl patch: change an object with a JSON merge patch (RFC 7386).

`patch KIND NAME | TYPE/NAME -p '{"spec":{"replicas":3}}' [--type merge]
[--subresource status]`. skiff speaks merge patch only; `--type strategic`
(kubectl's default) is accepted and sent as a merge patch, which is the same
for every field except lists; `--type json` is refused. Prints
`deployment.apps/web patched`, or `patched (no change)` when nothing changed.
"""

from __future__ import annotations

import argparse
import copy

from controlplane.cli import printers
from controlplane.cli.context import CliError, Context
from controlplane.cli.resources import parse_patch, parse_targets
from controlplane.client.interface import Object


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("resources", nargs="+", metavar="KIND NAME | TYPE/NAME")
    parser.add_argument("-p", "--patch", required=True, help="the patch, JSON or YAML")
    parser.add_argument("--type", default="strategic", choices=("merge", "strategic", "json"))
    parser.add_argument("--subresource", default="", choices=("", "status"))
    parser.add_argument("-o", "--output", choices=("name", "yaml", "json"))


def run(ctx: Context) -> int:
    args = ctx.args
    if args.type == "json":
        raise CliError("--type json (RFC 6902) is not supported by skiff; use --type merge")
    body = parse_patch(args.patch)
    targets = parse_targets(args.resources, need_name=True)
    for t in targets:
        assert t.name is not None
        ns = ctx.namespace if t.info.namespaced else None
        before = ctx.client.get(t.info.key, t.name, ns)
        after = ctx.client.patch(t.info.key, t.name, body, ns, subresource=args.subresource)
        if args.output == "yaml":
            ctx.stdout.write(printers.to_yaml(after))
            continue
        if args.output == "json":
            ctx.stdout.write(printers.to_json(after))
            continue
        label = printers.type_name(t.info, t.name)
        if args.output == "name":
            ctx.out(label)
            continue
        same = _comparable(before) == _comparable(after)
        ctx.out(f"{label} patched (no change)" if same else f"{label} patched")
    return 0


def _comparable(obj: Object) -> Object:
    """The object without fields every write changes (resourceVersion, managedFields)."""
    out = copy.deepcopy(obj)
    meta = out.get("metadata") or {}
    meta.pop("resourceVersion", None)
    meta.pop("managedFields", None)
    return out
