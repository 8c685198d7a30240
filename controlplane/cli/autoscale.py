"""skiffctl autoscale: create a HorizontalPodAutoscaler for a workload, as kubectl does.

`autoscale (deployment|replicaset|statefulset)/NAME | KIND NAME --max M
[--min N] [--cpu-percent P] [--name HPA]` reads the target (so a missing one
is `Error from server (NotFound)`), then creates an autoscaling/v2
HorizontalPodAutoscaler named after it: scaleTargetRef from the target's
apiVersion, kind and name; minReplicas when --min is given (the server
defaults it to 1); maxReplicas; and, with --cpu-percent, one Resource metric
on cpu with a Utilization target. Prints
`horizontalpodautoscaler.autoscaling/web autoscaled`. The HPA controller does
the scaling; this module only writes the object.
"""

from __future__ import annotations

import argparse

from controlplane.api import kinds
from controlplane.cli import printers
from controlplane.cli.context import CliError, Context
from controlplane.cli.resources import parse_targets
from controlplane.client.interface import Object

SCALABLE = ("Deployment", "ReplicaSet", "StatefulSet")


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("resources", nargs="+", metavar="KIND NAME | TYPE/NAME")
    parser.add_argument("--min", type=int, default=-1, help="lower replica limit (default 1)")
    parser.add_argument("--max", type=int, default=-1, help="upper replica limit (required)")
    parser.add_argument(
        "--cpu-percent",
        type=int,
        default=-1,
        help="target average CPU utilization over all pods, percent of requests",
    )
    parser.add_argument("--name", default="", help="name of the HPA (default: the target's)")
    parser.add_argument("-o", "--output", choices=("name", "yaml", "json"))


def validate(min_replicas: int, max_replicas: int) -> None:
    """kubectl's checks on the flags, before anything is read or written."""
    if max_replicas < 1:
        raise CliError(f"--max=MAXPODS is required and must be at least 1, max: {max_replicas}")
    if max_replicas < min_replicas:
        raise CliError(
            "--max=MAXPODS must be larger or equal to --min=MINPODS, "
            f"max: {max_replicas}, min: {min_replicas}"
        )
    if min_replicas == 0:
        raise CliError("--min=MINPODS must be at least 1")


def hpa_for(
    target: Object, name: str, min_replicas: int, max_replicas: int, cpu_percent: int
) -> Object:
    """The HorizontalPodAutoscaler kubectl's autoscaling/v2 generator makes."""
    meta = printers.meta(target)
    spec: Object = {
        "scaleTargetRef": {
            "apiVersion": target.get("apiVersion")
            or kinds.by_kind(str(target["kind"])).api_version,
            "kind": target["kind"],
            "name": meta["name"],
        },
        "maxReplicas": max_replicas,
    }
    if min_replicas > 0:
        spec["minReplicas"] = min_replicas
    if cpu_percent >= 0:
        spec["metrics"] = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": cpu_percent},
                },
            }
        ]
    hpa_meta: Object = {"name": name}
    if meta.get("namespace"):
        hpa_meta["namespace"] = meta["namespace"]
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": hpa_meta,
        "spec": spec,
    }


def run(ctx: Context) -> int:
    args = ctx.args
    validate(args.min, args.max)
    targets = parse_targets(args.resources, need_name=True)
    if args.name and len(targets) > 1:
        raise CliError("--name can only be used with a single resource")
    for t in targets:
        if t.info.key not in SCALABLE:
            raise CliError(
                f"cannot autoscale a {t.info.key}: only deployments, replicasets and "
                "statefulsets can be autoscaled"
            )
    hpa_info = kinds.by_kind("HorizontalPodAutoscaler")
    for t in targets:
        assert t.name is not None
        target = ctx.client.get(t.info.key, t.name, ctx.namespace)
        target.setdefault("kind", t.info.key)
        target.setdefault("apiVersion", t.info.api_version)
        body = hpa_for(target, args.name or t.name, args.min, args.max, args.cpu_percent)
        created = ctx.client.create(hpa_info.kind, body, ctx.namespace)
        if args.output == "yaml":
            ctx.stdout.write(printers.to_yaml(created))
        elif args.output == "json":
            ctx.stdout.write(printers.to_json(created))
        elif args.output == "name":
            ctx.out(printers.type_name(hpa_info, printers.name(created)))
        else:
            ctx.out(f"{printers.type_name(hpa_info, printers.name(created))} autoscaled")
    return 0
