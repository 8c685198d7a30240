"""skiffctl label / annotate: set or remove labels or annotations with a merge patch.

`label KIND NAME... | TYPE/NAME... | KIND (-l SEL | --all) key=value... key-
[--overwrite]`. An argument with `=` sets, one ending in `-` removes; changing
an existing value needs --overwrite. Prints `node/n1 labeled` (`annotated`),
or `not labeled` when nothing changed.
"""

from __future__ import annotations

import argparse
from typing import Any

from controlplane.cli import printers
from controlplane.cli.context import CliError, Context
from controlplane.cli.get import list_all, scope
from controlplane.cli.resources import parse_targets
from controlplane.client.interface import Object


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("args", nargs="+", metavar="KIND NAME... KEY=VALUE... KEY-")
    parser.add_argument("--overwrite", action="store_true")
    parser.add_argument("-l", "--selector", default="")
    parser.add_argument("--all", action="store_true")
    parser.add_argument("-A", "--all-namespaces", action="store_true")


def _split(words: list[str]) -> tuple[list[str], dict[str, str], list[str]]:
    resources: list[str] = []
    sets: dict[str, str] = {}
    removes: list[str] = []
    for w in words:
        if "=" in w:
            key, _, value = w.partition("=")
            if not key:
                raise CliError(f"invalid label spec {w!r}")
            sets[key] = value
        elif w.endswith("-") and len(w) > 1 and resources:
            removes.append(w[:-1])
        else:
            if sets or removes:
                raise CliError(f"all resources must be specified before label changes: {w}")
            resources.append(w)
    if not sets and not removes:
        raise CliError("at least one label update is required (KEY=VALUE or KEY-)")
    return resources, sets, removes


def run(ctx: Context) -> int:
    field = "labels" if ctx.args.verb == "label" else "annotations"
    done = "labeled" if field == "labels" else "annotated"
    words, sets, removes = _split(ctx.args.args)
    targets = parse_targets(words)
    objects: list[tuple[Any, Object]] = []
    for t in targets:
        if t.name is not None:
            ns = ctx.namespace if t.info.namespaced else None
            objects.append((t.info, ctx.client.get(t.info.key, t.name, ns)))
        elif ctx.args.all or ctx.args.selector:
            objs, _ = list_all(ctx.client, t.info, scope(ctx, t.info), ctx.args.selector)
            objects.extend((t.info, o) for o in objs)
        else:
            raise CliError("resource(s) were provided, but no name, -l or --all was specified")
    for info, obj in objects:
        current = printers.meta(obj).get(field) or {}
        for key, value in sets.items():
            if key in current and current[key] != value and not ctx.args.overwrite:
                raise CliError(
                    f"'{key}' already has a value ({current[key]}), and --overwrite is false"
                )
        change: dict[str, Any] = {k: v for k, v in sets.items() if current.get(k) != v}
        change.update({k: None for k in removes if k in current})
        label = printers.type_name(info, printers.name(obj))
        if not change:
            ctx.out(f"{label} not {done}")
            continue
        ns = printers.meta(obj).get("namespace")
        ctx.client.patch(info.key, printers.name(obj), {"metadata": {field: change}}, ns)
        ctx.out(f"{label} {done}")
    return 0
