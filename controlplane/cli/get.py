"""skiffctl get: list objects or show some by name, as tables, YAML, JSON or names.

`get KIND [NAME...] | TYPE/NAME... | KIND1,KIND2 [-n NS | -A] [-l SELECTOR]
[--field-selector F] [-o wide|yaml|json|name] [-w] [--show-labels]
[--no-headers]`. Lists are read in pages (`--chunk-size`, as kubectl does).
With -w it prints the list, then one row per change until the watch ends or
the user interrupts. A missing named object is reported and the exit code is
1, after the others are printed.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from controlplane.api import jsonpath
from controlplane.api.kinds import KindInfo
from controlplane.cli import printers
from controlplane.cli.context import CliError, Context
from controlplane.cli.resources import Target, parse_targets
from controlplane.client import errors
from controlplane.client.interface import ApiClient, ListOptions, Object

OUTPUTS = ("wide", "yaml", "json", "name", "jsonpath=TEMPLATE", "custom-columns=SPEC")


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("resources", nargs="*", metavar="KIND [NAME...] | TYPE/NAME")
    add_output_flags(parser)
    parser.add_argument("-A", "--all-namespaces", action="store_true")
    parser.add_argument("-l", "--selector", default="", help="label selector (a=b,c!=d)")
    parser.add_argument("--field-selector", default="", help="e.g. spec.nodeName=n1")
    parser.add_argument("-w", "--watch", action="store_true", help="after listing, watch")
    parser.add_argument("--watch-only", action="store_true", help="watch without listing first")
    parser.add_argument("--ignore-not-found", action="store_true")
    parser.add_argument("--chunk-size", type=int, default=500, help="list page size (0: all)")
    parser.add_argument("--sort-by", default="", help="JSONPath to sort by, e.g. .metadata.name")


def add_output_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", help="|".join(OUTPUTS))
    parser.add_argument("--show-labels", action="store_true")
    parser.add_argument("--no-headers", action="store_true")


def output_format(text: str | None) -> tuple[str, str]:
    """`-o` as (format, argument): ("table", ""), ("jsonpath", "{.x}"), ..."""
    if not text:
        return "table", ""
    fmt, _, arg = text.partition("=")
    if fmt in ("wide", "yaml", "json", "name") and not arg:
        return fmt, ""
    if fmt in ("jsonpath", "custom-columns") and arg:
        try:
            if fmt == "jsonpath":
                jsonpath.parse(arg)
            else:
                jsonpath.custom_columns(arg)
        except jsonpath.JsonPathError as err:
            raise CliError(f"error parsing {fmt} template: {err}") from None
        return fmt, arg
    raise CliError(
        f'unable to match a printer suitable for the output format "{text}", allowed formats '
        "are: custom-columns=SPEC,json,jsonpath=TEMPLATE,name,wide,yaml"
    )


def list_all(
    client: ApiClient,
    info: KindInfo,
    namespace: str | None,
    label_selector: str = "",
    field_selector: str = "",
    chunk_size: int = 0,
) -> tuple[list[Object], str]:
    """Every matching object, page by page; returns (items, resourceVersion)."""
    items: list[Object] = []
    token = ""
    while True:
        page = client.list(
            info.key,
            namespace,
            ListOptions(label_selector, field_selector, max(0, chunk_size), token),
        )
        items.extend(page.items)
        token = page.continue_token
        if not token:
            return items, page.resource_version


def scope(ctx: Context, info: KindInfo) -> str | None:
    """The namespace to read `info` from: None for cluster-scoped kinds or -A."""
    if not info.namespaced or ctx.all_namespaces:
        return None
    return ctx.namespace


class Output:
    """Prints objects of one kind in the chosen format; remembers if it printed headers."""

    def __init__(self, ctx: Context, info: KindInfo, with_kind: bool) -> None:
        self.ctx = ctx
        self.info = info
        self.format, self.template = output_format(ctx.args.output)
        self.table = printers.TablePrinter(
            info,
            ctx.now(),
            wide=self.format == "wide",
            with_namespace=ctx.all_namespaces and info.namespaced,
            with_kind=with_kind,
            show_labels=getattr(ctx.args, "show_labels", False),
        )
        self.no_headers = getattr(ctx.args, "no_headers", False)
        self.header_done = False
        self.documents = 0

    def print(self, objs: list[Object]) -> None:
        if self.format == "name":
            for obj in objs:
                self.ctx.out(printers.type_name(self.info, printers.name(obj)))
        elif self.format in ("yaml", "json"):
            for obj in objs:
                self.document(obj)
        elif self.format == "jsonpath":
            for obj in objs:
                self.ctx.stdout.write(jsonpath.render(self.template, obj))
            self.ctx.stdout.flush()
        elif self.format == "custom-columns":
            columns = jsonpath.custom_columns(self.template)
            text = printers.format_table(
                [h for h, _ in columns],
                [[jsonpath.column_value(p, o) for _, p in columns] for o in objs],
                no_headers=self.no_headers or self.header_done,
            )
            self.header_done = True
            self.ctx.stdout.write(text)
            self.ctx.stdout.flush()
        else:
            self.table.now = self.ctx.now()
            text = printers.format_table(
                self.table.headers(),
                [self.table.row(o) for o in objs],
                no_headers=self.no_headers or self.header_done,
            )
            self.header_done = True
            if text:
                self.ctx.stdout.write(text)
                self.ctx.stdout.flush()

    def document(self, obj: Object) -> None:
        if self.format == "json":
            self.ctx.stdout.write(printers.to_json(obj))
        else:
            self.ctx.stdout.write(("---\n" if self.documents else "") + printers.to_yaml(obj))
        self.documents += 1
        self.ctx.stdout.flush()


def sort_by(objs: list[Object], path: str) -> list[Object]:
    """Objects ordered by the value at a JSONPath: numbers as numbers, missing first."""
    if not path:
        return objs

    def key(obj: Object) -> tuple[int, float, str]:
        found = jsonpath.values(path, obj)
        if not found:
            return (0, 0.0, "")
        value = found[0]
        if isinstance(value, int | float) and not isinstance(value, bool):
            return (1, float(value), "")
        return (2, 0.0, jsonpath.column_value(path, obj))

    return sorted(objs, key=key)


def _fetch(
    ctx: Context, targets: list[Target]
) -> tuple[list[tuple[KindInfo, list[Object], str]], int]:
    args = ctx.args
    groups: list[tuple[KindInfo, list[Object], str]] = []
    failures = 0
    for target in targets:
        info = target.info
        if target.name is None:
            objs, rv = list_all(
                ctx.client,
                info,
                scope(ctx, info),
                args.selector,
                args.field_selector,
                args.chunk_size,
            )
            groups.append((info, sort_by(objs, args.sort_by), rv))
            continue
        try:
            obj = ctx.client.get(info.key, target.name, ctx.namespace if info.namespaced else None)
        except errors.NotFound as err:
            if not args.ignore_not_found:
                ctx.err(f"Error from server (NotFound): {err}")
                failures += 1
            continue
        rv = str(printers.meta(obj).get("resourceVersion") or "")
        if groups and groups[-1][0] is info:
            prev = groups[-1]
            newest = max(prev[2], rv, key=lambda v: int(v) if v.isdigit() else 0)
            groups[-1] = (info, [*prev[1], obj], newest)
        else:
            groups.append((info, [obj], rv))
    return groups, failures


def run(ctx: Context) -> int:
    args = ctx.args
    targets = parse_targets(args.resources)
    fmt, template = output_format(args.output)
    if ctx.all_namespaces and any(t.name is not None and t.info.namespaced for t in targets):
        raise CliError("a resource cannot be retrieved by name across all namespaces")
    if args.sort_by:
        try:
            jsonpath.values(args.sort_by, {})
        except jsonpath.JsonPathError as err:
            raise CliError(f"--sort-by: {err}") from None
    if (args.watch or args.watch_only) and len({t.info.key for t in targets}) > 1:
        raise CliError("you may only specify a single resource type with --watch")
    if args.watch_only:
        return _watch(ctx, targets, "", Output(ctx, targets[0].info, False))
    groups, failures = _fetch(ctx, targets)
    listing = any(t.name is None for t in targets)
    single = len(targets) == 1 and targets[0].name is not None
    total = sum(len(objs) for _, objs, _ in groups)
    if fmt in ("yaml", "json", "jsonpath") and not single:
        everything = [o for _, objs, _ in groups for o in objs]
        doc = printers.as_list(everything)
        if fmt == "jsonpath":
            ctx.stdout.write(jsonpath.render(template, doc))
        else:
            ctx.stdout.write(printers.to_json(doc) if fmt == "json" else printers.to_yaml(doc))
    else:
        multi = len({info.key for info, _, _ in groups}) > 1
        first = True
        for info, objs, _ in groups:
            if not objs:
                continue
            if not first and fmt in ("table", "wide", "custom-columns"):
                ctx.out("")
            first = False
            output = Output(ctx, info, with_kind=multi)
            output.print(objs)
    if listing and total == 0 and not args.watch:
        info = targets[0].info
        where = (
            f" in {ctx.namespace} namespace" if info.namespaced and not ctx.all_namespaces else ""
        )
        ctx.err(f"No resources found{where}.")
    if args.watch:
        rv = groups[0][2] if groups else ""
        output = Output(ctx, targets[0].info, False)
        output.header_done = total > 0
        return _watch(ctx, targets, rv, output) or (1 if failures else 0)
    return 1 if failures else 0


def _events(ctx: Context, targets: list[Target], rv: str) -> Iterator[tuple[str, Object]]:
    info = targets[0].info
    field_selector = ctx.args.field_selector
    names = [t.name for t in targets if t.name]
    if len(names) == 1:
        extra = f"metadata.name={names[0]}"
        field_selector = f"{field_selector},{extra}" if field_selector else extra
    watch = ctx.client.watch(
        info.key,
        scope(ctx, info),
        ListOptions(ctx.args.selector, field_selector, 0, "", rv),
        allow_bookmarks=False,
    )
    try:
        for event in watch:
            if event.type == "BOOKMARK":
                continue
            if names and printers.name(event.object) not in names:
                continue
            yield event.type, event.object
    finally:
        watch.stop()


def _watch(ctx: Context, targets: list[Target], rv: str, output: Output) -> int:
    for _type, obj in _events(ctx, targets, rv):
        output.print([obj])
    return 0
