"""skiffctl wait: block until objects meet a condition, as `kubectl wait` does.

`wait KIND NAME... | TYPE/NAME... | KIND (-l SELECTOR | --all)
--for=condition=Ready[=true] | --for=delete | --for=jsonpath='{.status.phase}'=Running
[--timeout 30s]`. Each object is checked once, then a watch (never a polling
loop) delivers changes until every object is done or the timeout, measured on
the injected clock, passes. Prints `pod/web condition met` or `pod/web
deleted`; on timeout `error: timed out waiting for the condition on pods/web`
and exit 1.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass

from controlplane.api import jsonpath
from controlplane.api.kinds import KindInfo
from controlplane.cli import printers
from controlplane.cli.context import CliError, Context
from controlplane.cli.get import list_all, scope
from controlplane.cli.resources import parse_targets
from controlplane.client import errors
from controlplane.client.interface import ListOptions, Object


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("resources", nargs="+", metavar="KIND NAME | TYPE/NAME | KIND -l SEL")
    parser.add_argument(
        "--for",
        dest="for_",
        required=True,
        help="condition=NAME[=VALUE] | delete | jsonpath={PATH}=VALUE",
    )
    parser.add_argument("--timeout", default="30s", help="e.g. 30s, 2m, 1h; 0: check once")
    parser.add_argument("-l", "--selector", default="")
    parser.add_argument("--all", action="store_true")
    parser.add_argument("-A", "--all-namespaces", action="store_true")


def parse_duration(text: str) -> float:
    """`30s`, `2m`, `1h30m`, `500ms` or a bare number of seconds."""
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise CliError(f"invalid --timeout {text!r} (use e.g. 30s, 2m, 1h)")
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(n) * scale[u] for n, u in parts)


@dataclass(frozen=True)
class Condition:
    delete: bool
    check: Callable[[Object], bool]
    what: str


def parse_for(text: str) -> Condition:
    if text == "delete":
        return Condition(True, lambda obj: False, "deleted")
    if text.startswith("condition="):
        rest = text[len("condition=") :]
        name, _, value = rest.partition("=")
        if not name:
            raise CliError("--for=condition=NAME needs a condition name")
        want = (value or "true").lower()

        def has_condition(obj: Object) -> bool:
            for c in printers.status(obj).get("conditions") or []:
                if str(c.get("type", "")).lower() == name.lower():
                    return str(c.get("status", "")).lower() == want
            return False

        return Condition(False, has_condition, "condition met")
    if text.startswith("jsonpath="):
        rest = text[len("jsonpath=") :]
        m = re.fullmatch(r"(\{.*\}|[^=]+)=(.*)", rest)
        if m is None:
            raise CliError("--for=jsonpath needs {PATH}=VALUE")
        path, value = m.group(1), m.group(2).strip("'\"")
        try:
            jsonpath.values(path, {})
        except jsonpath.JsonPathError as err:
            raise CliError(f"--for=jsonpath: {err}") from None

        def matches(obj: Object) -> bool:
            return jsonpath.column_value(path, obj) == value

        return Condition(False, matches, "condition met")
    raise CliError(f"unrecognized condition {text!r}: use condition=NAME, delete or jsonpath=...")


def _wait_kind(
    ctx: Context, info: KindInfo, ns: str | None, names: set[str], cond: Condition, timeout: float
) -> set[str]:
    """Wait for `names` (all in `ns`); returns the names still not done."""
    objs, rv = list_all(ctx.client, info, ns)
    present = {printers.name(o): o for o in objs}
    pending = set()
    for name in sorted(names):
        obj = present.get(name)
        if cond.delete:
            if obj is None:
                ctx.out(f"{printers.type_name(info, name)} deleted")
            else:
                pending.add(name)
        elif obj is not None and cond.check(obj):
            ctx.out(f"{printers.type_name(info, name)} {cond.what}")
        else:
            pending.add(name)
    if not pending or timeout <= 0:
        return pending
    watch = ctx.client.watch(info.key, ns, ListOptions(resource_version=rv))
    timer = ctx.clock.call_later(timeout, watch.stop)
    try:
        for event in watch:
            name = printers.name(event.object)
            if name not in pending:
                continue
            if cond.delete:
                done = event.type == "DELETED"
            else:
                done = event.type != "DELETED" and cond.check(event.object)
            if done:
                pending.discard(name)
                ctx.out(f"{printers.type_name(info, name)} {cond.what}")
            if not pending:
                break
    finally:
        timer.cancel()
        watch.stop()
    return pending


def run(ctx: Context) -> int:
    args = ctx.args
    cond = parse_for(args.for_)
    timeout = parse_duration(args.timeout)
    targets = parse_targets(args.resources)
    groups: dict[tuple[str, str | None], tuple[KindInfo, set[str]]] = {}
    for t in targets:
        if t.name is not None:
            ns = ctx.namespace if t.info.namespaced else None
            groups.setdefault((t.info.key, ns), (t.info, set()))[1].add(t.name)
            continue
        if not (args.all or args.selector):
            raise CliError("resource name or -l SELECTOR or --all is required")
        objs, _ = list_all(ctx.client, t.info, scope(ctx, t.info), args.selector)
        if not objs:
            raise CliError("no matching resources found")
        for o in objs:
            ns = printers.meta(o).get("namespace")
            groups.setdefault((t.info.key, ns), (t.info, set()))[1].add(printers.name(o))
    failed = False
    deadline = ctx.clock.monotonic() + timeout
    for (_, ns), (info, names) in groups.items():
        left = max(0.0, deadline - ctx.clock.monotonic())
        try:
            pending = _wait_kind(ctx, info, ns, names, cond, left)
        except errors.NotFound as err:
            raise CliError(str(err)) from None
        for name in sorted(pending):
            ctx.err(f"error: timed out waiting for the condition on {info.plural}/{name}")
            failed = True
    return 1 if failed else 0
