"""The controller manager's settings: `ManagerConfig`, the controllers' names,
`--controllers` as Kubernetes reads it, and kube-controller-manager's flags.

Kept apart from manager.py, which imports every controller to map each name
to its init function: `skiff controlplane` parses these flags at every start,
and with its controllers in a process of their own (or disabled) it needs
only the names, not the controllers.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass

from controlplane.api.k8sproto.duration import parse_duration

# Every controller's name (kube-controller-manager's names), in start order;
# manager.REGISTRY maps each to its init function (a unit test keeps the two equal).
NAMES: tuple[str, ...] = (
    "replicaset",
    "replicationcontroller",
    "resourcequota",
    "disruption",
    "deployment",
    "statefulset",
    "daemonset",
    "job",
    "cronjob",
    "horizontalpodautoscaling",
    "nodelifecycle",
    "nodeipam",
    "endpoint",
    "endpointslice",
    "endpointslicemirroring",
    "servicelb",
    "ingress",
    "namespace",
    "garbagecollector",
    "podgc",
    "persistentvolume-binder",
    "pvc-protection",
    "pv-protection",
    "clusterrole-aggregation",
    "apf-configuration",
    "serviceaccount",
    "root-ca-cert-publisher",
    "csrsigning",
    "csrapproving",
    "csrcleaner",
    "volcano-job",
    "volcano-podgroup",
    "volcano-queue",
)


@dataclass(frozen=True)
class ManagerConfig:
    """Settings of the controller manager and its controllers (kube's flags)."""

    controllers: tuple[str, ...] = ("*",)
    workers: int = 0  # per controller (concurrent-*-syncs); 0: each controller's default
    cluster_cidr: str = "10.244.0.0/16"
    node_cidr_mask_size: int = 24
    allocate_node_cidrs: bool = True
    node_monitor_grace_period: float = 40.0
    node_monitor_period: float = 5.0
    default_toleration_seconds: int = 300
    node_eviction_rate: float = 0.1
    secondary_node_eviction_rate: float = 0.01
    hpa_sync_period: float = 15.0
    hpa_downscale_stabilization: float = 300.0
    hpa_tolerance: float = 0.1
    # --root-ca-file: the CA published as kube-root-ca.crt in every namespace
    # (empty: the controller client's own CA, if it has one).
    root_ca_pem: bytes = b""
    terminated_pod_gc_threshold: int = 12500
    # The CA the CSR signers sign with (--cluster-signing-cert-file/-key-file;
    # skiff controlplane passes its own), and their longest certificate
    # (--cluster-signing-duration, seconds; a year as Kubernetes').
    cluster_signing_cert_file: str = ""
    cluster_signing_key_file: str = ""
    cluster_signing_duration: float = 365 * 24 * 3600.0
    pod_gc_period: float = 20.0
    burst_replicas: int = 500
    api_parallelism: int = 16  # concurrent API writes of one batch
    leader_elect: bool = False
    leader_elect_namespace: str = "kube-system"
    leader_elect_name: str = "skiff-controller-manager"
    leader_elect_identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resync_period: float = 0.0


# Not started by `*`: the API server already empties terminating namespaces
# itself (controlplane/apiserver/namespaces.py); enable with `namespace`.
DISABLED_BY_DEFAULT: frozenset[str] = frozenset({"namespace"})


class UnknownController(ValueError):
    """A --controllers entry naming no known controller."""


def parse_controllers(text: str | Iterable[str], known: Iterable[str] = ()) -> tuple[str, ...]:
    """`--controllers` as a tuple; refuses names that are not controllers."""
    items = [t.strip() for t in (text.split(",") if isinstance(text, str) else text)]
    items = [t for t in items if t]
    names = set(known) or set(NAMES)
    for item in items:
        bare = item[1:] if item.startswith("-") else item
        if bare != "*" and bare not in names:
            raise UnknownController(
                f"--controllers: unknown controller {bare!r}; known: {', '.join(sorted(names))}"
            )
    return tuple(items) or ("*",)


def is_enabled(
    name: str, controllers: Iterable[str], disabled_by_default: Iterable[str] = DISABLED_BY_DEFAULT
) -> bool:
    """kube-controller-manager's IsControllerEnabled."""
    star = False
    for item in controllers:
        if item == name:
            return True
        if item == f"-{name}":
            return False
        if item == "*":
            star = True
    return star and name not in set(disabled_by_default)


def add_flags(parser: argparse.ArgumentParser) -> None:
    """kube-controller-manager's flags that skiff supports, for `skiff controlplane`."""
    d = ManagerConfig()
    parser.add_argument(
        "--controllers",
        default="*",
        help="controllers to run: '*' (all enabled by default), 'name', '-name', comma-separated; "
        f"known: {', '.join(sorted(NAMES))}",
    )
    parser.add_argument("--cluster-cidr", default=d.cluster_cidr, help="pod CIDR of the cluster")
    parser.add_argument("--node-cidr-mask-size", type=int, default=d.node_cidr_mask_size)
    parser.add_argument(
        "--allocate-node-cidrs", default=True, action=argparse.BooleanOptionalAction
    )
    parser.add_argument(
        "--node-monitor-grace-period", type=float, default=d.node_monitor_grace_period
    )
    parser.add_argument(
        "--default-not-ready-toleration-seconds", type=int, default=d.default_toleration_seconds
    )
    parser.add_argument(
        "--terminated-pod-gc-threshold", type=int, default=d.terminated_pod_gc_threshold
    )
    parser.add_argument(
        "--horizontal-pod-autoscaler-sync-period", type=float, default=d.hpa_sync_period
    )
    parser.add_argument(
        "--horizontal-pod-autoscaler-downscale-stabilization",
        type=float,
        default=d.hpa_downscale_stabilization,
    )
    parser.add_argument("--concurrent-syncs", type=int, default=d.workers)
    parser.add_argument("--cluster-signing-cert-file", default="",
                        help="the CA certificate the CSR signers sign with "
                        "(skiff controlplane: <data-dir>/pki/ca.crt)")  # fmt: skip
    parser.add_argument("--cluster-signing-key-file", default="",
                        help="its key (skiff controlplane: <data-dir>/pki/ca.key)")  # fmt: skip
    parser.add_argument("--cluster-signing-duration", default="8760h0m0s",
                        help="the longest certificate the CSR signers issue (a Go duration)")  # fmt: skip
    parser.add_argument("--leader-elect", default=True, action=argparse.BooleanOptionalAction)
    parser.add_argument("--controller-metrics-listen", default="", help="HOST:PORT for /metrics")


def config_from_args(args: argparse.Namespace) -> ManagerConfig:
    return ManagerConfig(
        # `--disable servicelb|ingress` (k3s' --disable servicelb|traefik) turns
        # the built-in load balancer or ingress controller off.
        controllers=parse_controllers(args.controllers)
        + tuple(
            f"-{n}" for n in getattr(args, "disable", []) or [] if n in ("servicelb", "ingress")
        ),
        cluster_cidr=args.cluster_cidr,
        node_cidr_mask_size=args.node_cidr_mask_size,
        allocate_node_cidrs=args.allocate_node_cidrs,
        node_monitor_grace_period=args.node_monitor_grace_period,
        default_toleration_seconds=args.default_not_ready_toleration_seconds,
        terminated_pod_gc_threshold=args.terminated_pod_gc_threshold,
        hpa_sync_period=args.horizontal_pod_autoscaler_sync_period,
        hpa_downscale_stabilization=args.horizontal_pod_autoscaler_downscale_stabilization,
        workers=args.concurrent_syncs,
        leader_elect=args.leader_elect,
        cluster_signing_cert_file=args.cluster_signing_cert_file,
        cluster_signing_key_file=args.cluster_signing_key_file,
        cluster_signing_duration=_signing_duration(args.cluster_signing_duration),
    )


def _signing_duration(text: str) -> float:
    nanos = parse_duration(text)
    if nanos is None or nanos < 600 * 10**9:
        raise ValueError(f"--cluster-signing-duration: {text!r} is not a duration of at least 10m")
    return nanos / 10**9
