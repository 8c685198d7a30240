"""skiffctl top: CPU and memory use of nodes and pods, from each node's agent.

`top nodes [NAME] [-l SEL] [--sort-by cpu|memory] [--no-headers]` and
`top pods [NAME] [-n NS | -A] [-l SEL] [--containers] [--sort-by cpu|memory]
[--no-headers]` print kubectl's columns (`NAME  CPU(cores)  CPU(%)
MEMORY(bytes)  MEMORY(%)` for nodes; `NAME  CPU(cores)  MEMORY(bytes)` for
pods, with NAMESPACE under -A and POD under --containers). Usage comes from
each node's agent through the API server's nodes/<name>/stats (in
parallel; skiffctl never dials an agent): CPU as
cpu_usage_nano_cores in millicores, memory as the working set in Mi, node
percentages against the Node's allocatable. Where an agent reports only the
cumulative CPU counter, a second sample one interval later (on the injected
clock) gives the rate, as metrics-server does. An agent that cannot be
read is a warning on stderr and `<unknown>` in its node's row.
Read-only: nothing is written anywhere.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from controlplane.api import kinds, quantity
from controlplane.cli import printers
from controlplane.cli.context import CliError, Context
from controlplane.cli.get import list_all
from controlplane.cli.logs import api_config, api_failure
from controlplane.client import apirest, errors
from controlplane.client.interface import Object
from proto.agent.v1 import agent_pb2 as pb

STATS_TIMEOUT = 10.0
RATE_INTERVAL = 1.0
MAX_PARALLEL = 16
UNKNOWN = "<unknown>"
MI = 1024 * 1024
KINDS = {
    "node": "nodes",
    "nodes": "nodes",
    "no": "nodes",
    "pod": "pods",
    "pods": "pods",
    "po": "pods",
}


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("words", nargs="+", metavar="nodes|pods [NAME]")
    parser.add_argument("-l", "--selector", default="")
    parser.add_argument("-A", "--all-namespaces", action="store_true")
    parser.add_argument("--containers", action="store_true", help="pods: one row per container")
    parser.add_argument("--sort-by", default="", choices=("", "cpu", "memory"))
    parser.add_argument("--no-headers", action="store_true")


# ---- reading usage -----------------------------------------------------------------------


@dataclass
class Usage:
    """CPU in nano cores and memory working set in bytes of one node, pod or container."""

    nano_cores: int
    memory: int


@dataclass
class NodeSample:
    node: str
    address: str = ""
    response: pb.StatsResponse | None = None
    error: str = ""


def _rate(first: pb.Usage, second: pb.Usage) -> int:
    """Nano cores from two cumulative CPU readings."""
    dt = second.timestamp_nanos - first.timestamp_nanos
    dcpu = second.cpu_usage_core_nano_seconds - first.cpu_usage_core_nano_seconds
    if dt <= 0 or dcpu < 0:
        return 0
    return int(dcpu * 1_000_000_000 // dt)


def _needs_rate(u: pb.Usage) -> bool:
    return u.cpu_usage_nano_cores == 0 and u.cpu_usage_core_nano_seconds > 0


class Sampler:
    """Stats from the agents of some nodes, fetched in parallel."""

    def __init__(self, ctx: Context, request: pb.StatsRequest) -> None:
        self.ctx = ctx
        self.request = request
        self.config = api_config(ctx)

    def _one(self, node: Object) -> NodeSample:
        sample = NodeSample(printers.name(node))
        try:
            sample.response = apirest.node_stats(
                self.config, sample.node, self.request.namespace, STATS_TIMEOUT, self.request.pod
            )
        except errors.ApiError as err:
            sample.error = api_failure(err)
        return sample

    def sample(self, nodes: list[Object]) -> list[NodeSample]:
        if not nodes:
            return []
        with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(nodes))) as pool:
            return list(pool.map(self._one, nodes))

    def usage(self, nodes: list[Object]) -> list[NodeSample]:
        """One sample per node; a second one where only cumulative CPU was reported."""
        samples = self.sample(nodes)
        lacking = [
            n
            for n, s in zip(nodes, samples, strict=True)
            if s.response is not None
            and (
                _needs_rate(s.response.node.usage)
                or any(_needs_rate(p.usage) for p in s.response.pods)
            )
        ]
        if not lacking:
            return samples
        self.ctx.clock.sleep(RATE_INTERVAL)
        later = {s.node: s for s in self.sample(lacking)}
        for s in samples:
            second = later.get(s.node)
            if s.response is None or second is None or second.response is None:
                continue
            if _needs_rate(s.response.node.usage):
                s.response.node.usage.cpu_usage_nano_cores = _rate(
                    s.response.node.usage, second.response.node.usage
                )
            after = {p.uid or f"{p.namespace}/{p.pod}": p for p in second.response.pods}
            for p in s.response.pods:
                q = after.get(p.uid or f"{p.namespace}/{p.pod}")
                if q is None:
                    continue
                if _needs_rate(p.usage):
                    p.usage.cpu_usage_nano_cores = _rate(p.usage, q.usage)
                by_name = {c.name: c for c in q.containers}
                for c in p.containers:
                    d = by_name.get(c.name)
                    if d is not None and _needs_rate(c.usage):
                        c.usage.cpu_usage_nano_cores = _rate(c.usage, d.usage)
        return samples


def millicores(nano: int) -> str:
    return f"{nano // 1_000_000}m"


def mebibytes(count: int) -> str:
    return f"{count // MI}Mi"


def _sorted(rows: list[tuple[Usage | None, list[str]]], by: str) -> list[list[str]]:
    if by == "cpu":
        rows.sort(key=lambda r: -(r[0].nano_cores if r[0] else -1))
    elif by == "memory":
        rows.sort(key=lambda r: -(r[0].memory if r[0] else -1))
    return [r[1] for r in rows]


def _warn(ctx: Context, samples: list[NodeSample]) -> None:
    for s in samples:
        if s.error:
            text = s.error[len("error: ") :] if s.error.startswith("error: ") else s.error
            ctx.err(f"warning: {text}")


# ---- nodes --------------------------------------------------------------------------------


def _allocatable(node: Object, resource: str) -> int:
    """Allocatable (else capacity) `resource` as milli-units (cpu) or bytes (memory)."""
    st = printers.status(node)
    value = (st.get("allocatable") or {}).get(resource) or (st.get("capacity") or {}).get(resource)
    if value is None:
        return 0
    try:
        q = quantity.parse_quantity(value)
    except ValueError:
        return 0
    return int(q * 1000) if resource == "cpu" else int(q)


def _percent(part: int, whole: int) -> str:
    return f"{part * 100 // whole}%" if whole > 0 else UNKNOWN


def top_nodes(ctx: Context, name: str) -> int:
    if name:
        nodes = [ctx.client.get("Node", name)]
    else:
        nodes, _ = list_all(ctx.client, kinds.by_kind("Node"), None, ctx.args.selector)
    if not nodes:
        ctx.err("No resources found")
        return 0
    nodes.sort(key=printers.name)
    samples = Sampler(ctx, pb.StatsRequest()).usage(nodes)
    _warn(ctx, samples)
    rows: list[tuple[Usage | None, list[str]]] = []
    for node, s in zip(nodes, samples, strict=True):
        if s.response is None:
            rows.append((None, [printers.name(node), UNKNOWN, UNKNOWN, UNKNOWN, UNKNOWN]))
            continue
        u = s.response.node.usage
        usage = Usage(u.cpu_usage_nano_cores, u.memory_working_set_bytes)
        rows.append(
            (
                usage,
                [
                    printers.name(node),
                    millicores(usage.nano_cores),
                    _percent(usage.nano_cores // 1_000_000, _allocatable(node, "cpu")),
                    mebibytes(usage.memory),
                    _percent(usage.memory, _allocatable(node, "memory")),
                ],
            )
        )
    known = [r for r in rows if r[0] is not None]
    unknown = [r for r in rows if r[0] is None]
    table = _sorted(known, ctx.args.sort_by) + [r[1] for r in unknown]
    headers = ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    ctx.stdout.write(printers.format_table(headers, table, ctx.args.no_headers))
    ctx.stdout.flush()
    return 0 if known else 1


# ---- pods ---------------------------------------------------------------------------------


def top_pods(ctx: Context, name: str) -> int:
    info = kinds.by_kind("Pod")
    ns = None if ctx.all_namespaces else ctx.namespace
    if name:
        if ctx.all_namespaces:
            raise CliError("a pod name cannot be given with --all-namespaces")
        pods = [ctx.client.get("Pod", name, ns)]
    else:
        pods, _ = list_all(ctx.client, info, ns, ctx.args.selector)
    pods = [p for p in pods if printers.spec(p).get("nodeName")]
    wanted = {(printers.meta(p).get("namespace"), printers.name(p)) for p in pods}
    if not pods:
        if name:
            raise CliError(f"Metrics not available for pod {ns}/{name}: it is not scheduled")
        ctx.err("No resources found" if ns is None else f"No resources found in {ns} namespace.")
        return 0
    node_names = sorted({str(printers.spec(p)["nodeName"]) for p in pods})
    nodes = []
    missing: list[NodeSample] = []
    for n in node_names:
        try:
            nodes.append(ctx.client.get("Node", n))
        except errors.NotFound as err:  # a deleted node: its pods have no usage to show
            missing.append(NodeSample(n, error=f"node {n}: {err}"))
    request = pb.StatsRequest(namespace=ns or "", pod=name)
    samples = Sampler(ctx, request).usage(nodes)
    _warn(ctx, missing + samples)
    rows: list[tuple[Usage | None, list[str]]] = []
    found: set[tuple[str, str]] = set()
    for s in samples:
        for p in s.response.pods if s.response is not None else []:
            key = (p.namespace, p.pod)
            if key not in wanted or key in found:
                continue
            found.add(key)
            prefix = [p.namespace] if ctx.all_namespaces else []
            if ctx.args.containers:
                for c in sorted(p.containers, key=lambda c: c.name):
                    u = Usage(c.usage.cpu_usage_nano_cores, c.usage.memory_working_set_bytes)
                    rows.append(
                        (u, [*prefix, p.pod, c.name, millicores(u.nano_cores), mebibytes(u.memory)])
                    )
            else:
                u = Usage(p.usage.cpu_usage_nano_cores, p.usage.memory_working_set_bytes)
                rows.append((u, [*prefix, p.pod, millicores(u.nano_cores), mebibytes(u.memory)]))
    if not rows:
        if name:
            raise CliError(f"Metrics not available for pod {ns}/{name}")
        raise CliError("Metrics not available yet")
    rows.sort(key=lambda r: r[1][: 2 if ctx.all_namespaces else 1])
    headers = ["NAMESPACE"] if ctx.all_namespaces else []
    headers += ["POD", "NAME"] if ctx.args.containers else ["NAME"]
    headers += ["CPU(cores)", "MEMORY(bytes)"]
    table = _sorted(rows, ctx.args.sort_by)
    ctx.stdout.write(printers.format_table(headers, table, ctx.args.no_headers))
    ctx.stdout.flush()
    return 0


TOPS: dict[str, Callable[[Context, str], int]] = {"nodes": top_nodes, "pods": top_pods}


def run(ctx: Context) -> int:
    words: list[str] = ctx.args.words
    what = KINDS.get(words[0].lower())
    if what is None:
        raise CliError(f'unknown resource "{words[0]}" for top: use nodes or pods')
    if len(words) > 2:
        raise CliError(f"top {what} takes at most one NAME")
    return TOPS[what](ctx, words[1] if len(words) == 2 else "")
