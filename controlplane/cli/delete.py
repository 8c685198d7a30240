"""skiffctl delete: remove objects by `KIND NAME...`, `TYPE/NAME...`, `-l`, `--all` or `-f`.

Flags as kubectl: `--grace-period N` (-1: the object's default), `--now`
(grace 1), `--force` (grace 0), `--cascade=background|foreground|orphan`
(also the old true/false), `--ignore-not-found`, and `--wait` (default on:
block until objects held by finalizers or a grace period are really gone,
watching rather than polling, up to `--timeout` seconds, 0 = no limit).
Prints `deployment.apps "web" deleted` per object.
"""

from __future__ import annotations

import argparse

from controlplane.api.kinds import KindInfo
from controlplane.cli import printers
from controlplane.cli.context import CliError, Context
from controlplane.cli.get import list_all, scope
from controlplane.cli.resources import load_manifests, object_namespace, parse_targets
from controlplane.client import errors
from controlplane.client.interface import DeleteOptions, ListOptions

CASCADE = {
    "background": "Background",
    "true": "Background",
    "foreground": "Foreground",
    "orphan": "Orphan",
    "false": "Orphan",
}


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("resources", nargs="*", metavar="KIND NAME... | TYPE/NAME...")
    parser.add_argument("-f", "--filename", action="append", default=[])
    parser.add_argument("-R", "--recursive", action="store_true")
    parser.add_argument("-l", "--selector", default="")
    parser.add_argument("--field-selector", default="")
    parser.add_argument("--all", action="store_true", help="every object of the kind")
    parser.add_argument("-A", "--all-namespaces", action="store_true")
    parser.add_argument("--grace-period", type=int, default=-1)
    parser.add_argument("--now", action="store_true", help="grace period of 1 second")
    parser.add_argument("--force", action="store_true", help="grace period of 0")
    parser.add_argument("--cascade", default="background", choices=sorted(CASCADE))
    parser.add_argument("--ignore-not-found", action="store_true")
    parser.add_argument("--wait", default="true", choices=("true", "false"), help="wait until gone")
    parser.add_argument("--timeout", type=float, default=0.0, help="seconds to wait (0: forever)")
    parser.add_argument("-o", "--output", choices=("name",))


def _options(args: argparse.Namespace) -> DeleteOptions:
    grace: int | None = None if args.grace_period < 0 else args.grace_period
    if args.now:
        grace = 1
    if args.force:
        grace = 0
    return DeleteOptions(grace_period_seconds=grace, propagation_policy=CASCADE[args.cascade])


def _targets(ctx: Context) -> list[tuple[KindInfo, str, str | None]]:
    args = ctx.args
    out: list[tuple[KindInfo, str, str | None]] = []
    if args.filename:
        if args.resources:
            raise CliError("cannot name resources together with -f")
        for m in load_manifests(args.filename, ctx.stdin, args.recursive):
            ns = object_namespace(m.info, m.obj, args.namespace)
            out.append((m.info, printers.name(m.obj), ns))
        return out
    targets = parse_targets(args.resources)
    for t in targets:
        if t.name is not None:
            out.append((t.info, t.name, ctx.namespace if t.info.namespaced else None))
            continue
        if not (args.all or args.selector or args.field_selector):
            raise CliError(
                "resource(s) were provided, but no name was specified; "
                "give names, -l SELECTOR or --all"
            )
        objs, _ = list_all(
            ctx.client, t.info, scope(ctx, t.info), args.selector, args.field_selector
        )
        for obj in objs:
            out.append((t.info, printers.name(obj), printers.meta(obj).get("namespace")))
        if not objs:
            ns = scope(ctx, t.info)
            ctx.err("No resources found" + (f" in {ns} namespace." if ns else "."))
    return out


def wait_gone(ctx: Context, info: KindInfo, pending: dict[str, str | None], timeout: float) -> bool:
    """Block until every name in `pending` (name -> namespace) is deleted; watch, don't poll."""
    by_ns: dict[str | None, set[str]] = {}
    for name, ns in pending.items():
        by_ns.setdefault(ns, set()).add(name)
    for ns, names in by_ns.items():
        objs, rv = list_all(ctx.client, info, ns)
        names &= {printers.name(o) for o in objs}
        if not names:
            continue
        watch = ctx.client.watch(info.key, ns, ListOptions(resource_version=rv))
        timer = ctx.clock.call_later(timeout, watch.stop) if timeout > 0 else None
        try:
            for event in watch:
                if event.type == "DELETED":
                    names.discard(printers.name(event.object))
                if not names:
                    break
        finally:
            if timer is not None:
                timer.cancel()
            watch.stop()
        if names:
            return False
    return True


def run(ctx: Context) -> int:
    args = ctx.args
    options = _options(args)
    failed = 0
    waiting: dict[str, tuple[KindInfo, dict[str, str | None]]] = {}
    for info, name, ns in _targets(ctx):
        try:
            remaining = ctx.client.delete(info.key, name, ns, options)
        except errors.NotFound as err:
            if not args.ignore_not_found:
                ctx.err(f"Error from server (NotFound): {err}")
                failed += 1
            continue
        if args.output == "name":
            ctx.out(printers.type_name(info, name))
        else:
            ctx.out(f'{printers.kind_label(info)} "{name}" deleted')
        if remaining is not None and args.wait == "true":
            waiting.setdefault(info.key, (info, {}))[1][name] = ns
    for info, pending in waiting.values():
        if not wait_gone(ctx, info, pending, args.timeout):
            ctx.err(f"error: timed out waiting for the deletion of {info.plural}")
            failed += 1
    return 1 if failed else 0
