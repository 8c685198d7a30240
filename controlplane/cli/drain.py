"""skiffctl drain: cordon a node, then evict its pods, as `kubectl drain` does.

Pods are classified first (nothing is deleted if any blocks the drain):
mirror pods are skipped; DaemonSet pods block unless `--ignore-daemonsets`
(then they are skipped with a warning); pods with no controller block unless
`--force`; pods with emptyDir volumes block unless `--delete-emptydir-data`;
finished pods are always deletable. Then each pod is deleted (skiffctl
deletes; `kubectl drain` evicts through pods/eviction, which honours
PodDisruptionBudgets) with
`--grace-period`, and drain waits (watching, not polling) until they are gone
or `--timeout` seconds pass (0: no limit). The node stays cordoned either way.
"""

from __future__ import annotations

import argparse

from controlplane.api import kinds
from controlplane.cli import printers
from controlplane.cli.context import Context
from controlplane.cli.cordon import nodes_named, set_unschedulable
from controlplane.cli.delete import wait_gone
from controlplane.cli.get import list_all
from controlplane.client import errors
from controlplane.client.interface import DeleteOptions, Object

MIRROR = "kubernetes.io/config.mirror"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("nodes", nargs="*", metavar="NODE")
    parser.add_argument("-l", "--selector", default="")
    parser.add_argument("--ignore-daemonsets", action="store_true")
    parser.add_argument("--delete-emptydir-data", action="store_true")
    parser.add_argument("--force", action="store_true", help="also delete pods with no controller")
    parser.add_argument("--grace-period", type=int, default=-1)
    parser.add_argument("--timeout", type=float, default=0.0, help="seconds (0: no limit)")
    parser.add_argument("--pod-selector", default="", help="only pods matching this selector")


def _controller(pod: Object) -> dict[str, object] | None:
    for ref in printers.meta(pod).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def classify(
    args: argparse.Namespace, pods: list[Object]
) -> tuple[list[Object], list[str], list[str]]:
    """(pods to delete, warnings, blocking errors)."""
    delete: list[Object] = []
    warn_ds: list[str] = []
    no_ctrl: list[str] = []
    ds: list[str] = []
    local: list[str] = []
    for pod in pods:
        meta = printers.meta(pod)
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        if MIRROR in (meta.get("annotations") or {}):
            continue
        finished = printers.status(pod).get("phase") in ("Succeeded", "Failed")
        ctrl = _controller(pod)
        if ctrl is not None and ctrl.get("kind") == "DaemonSet" and not finished:
            (warn_ds if args.ignore_daemonsets else ds).append(key)
            continue
        if ctrl is None and not finished and not args.force:
            no_ctrl.append(key)
            continue
        volumes = printers.spec(pod).get("volumes") or []
        if any("emptyDir" in v for v in volumes) and not finished and not args.delete_emptydir_data:
            local.append(key)
            continue
        delete.append(pod)
    errs = []
    if no_ctrl:
        errs.append(
            "cannot delete Pods that declare no controller (use --force to override): "
            + ", ".join(no_ctrl)
        )
    if ds:
        errs.append(
            "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): "
            + ", ".join(ds)
        )
    if local:
        errs.append(
            "cannot delete Pods with local storage (use --delete-emptydir-data to override): "
            + ", ".join(local)
        )
    warnings = []
    if warn_ds:
        warnings.append("ignoring DaemonSet-managed Pods: " + ", ".join(warn_ds))
    if no_ctrl == [] and args.force:
        forced = [
            f"{printers.meta(p).get('namespace')}/{printers.name(p)}"
            for p in delete
            if _controller(p) is None
        ]
        if forced:
            warnings.append("deleting Pods that declare no controller: " + ", ".join(forced))
    return delete, warnings, errs


def drain_node(ctx: Context, node: Object) -> int:
    args = ctx.args
    node_name = printers.name(node)
    ctx.out(set_unschedulable(ctx, node, True))
    pod_kind = kinds.by_kind("Pod")
    pods, _ = list_all(ctx.client, pod_kind, None, args.pod_selector, f"spec.nodeName={node_name}")
    to_delete, warnings, errs = classify(args, pods)
    if errs:
        ctx.err(f'error: unable to drain node "{node_name}" due to error: ' + "; ".join(errs))
        return 1
    for w in warnings:
        ctx.err(f"Warning: {w}")
    grace = None if args.grace_period < 0 else args.grace_period
    pending: dict[str, dict[str, str | None]] = {}
    for pod in to_delete:
        meta = printers.meta(pod)
        ns, name = meta.get("namespace"), printers.name(pod)
        ctx.out(f"evicting pod {ns}/{name}")
        try:
            left = ctx.client.delete("Pod", name, ns, DeleteOptions(grace_period_seconds=grace))
        except errors.NotFound:
            left = None
        if left is not None:
            pending.setdefault(str(ns), {})[name] = ns
    for ns, names in pending.items():
        if not wait_gone(ctx, pod_kind, names, args.timeout):
            ctx.err(
                f'error: unable to drain node "{node_name}": timed out waiting for pods in {ns} to go'
            )
            return 1
    for pod in to_delete:
        ctx.out(f"pod/{printers.name(pod)} evicted")
    ctx.out(f"node/{node_name} drained")
    return 0


def run(ctx: Context) -> int:
    code = 0
    for node in nodes_named(ctx, ctx.args.nodes, ctx.args.selector):
        code = max(code, drain_node(ctx, node))
    return code
