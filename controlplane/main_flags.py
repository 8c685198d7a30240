"""The flags of `skiff controlplane` (its entry point is controlplane/main.py)."""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import os

from controlplane import dataprep
from controlplane.controllers import config as controllers

DEFAULT_LISTEN = "0.0.0.0:6443"
DEFAULT_DATA_DIR = "/var/lib/skiff/controlplane"
DEFAULT_TOKEN_TTL = datetime.timedelta(hours=24)  # kubeadm's
# `--disable metrics-server`: the metrics API built in is not served (k3s' name for its addon).
METRICS_SERVER = "metrics-server"
DESCRIPTION = "Run the API server, the schedulers and the controller manager."


def token_ttl(text: str) -> datetime.timedelta | None:
    """--token-ttl: a duration (24h, 30m, 90s); 0 for a token that never expires."""
    from controlplane.cli.context import CliError
    from controlplane.cli.wait import parse_duration

    try:
        seconds = parse_duration(text)
    except CliError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 24h, 30m, 0)") from None
    return datetime.timedelta(seconds=seconds) if seconds > 0 else None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="skiff controlplane", description=DESCRIPTION)
    p.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        help="HOST:PORT to serve the API on (Kubernetes REST, and gRPC on the same port)",
    )
    p.add_argument(
        "--grpc-listen",
        default="",
        help="HOST:PORT to serve skiff's gRPC API on directly as well (admin.conf names it beside --listen)",
    )
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help="state directory")
    p.add_argument("--store", choices=("sqlite", "etcd"), default="sqlite")
    p.add_argument(
        "--etcd-endpoints",
        default="",
        help="comma-separated etcd client endpoints (host:port or http://host:port)",
    )
    p.add_argument("--etcd-prefix", default="/skiff", help="key prefix in etcd")
    p.add_argument(
        "--tls-san",
        action="append",
        default=[],
        help="extra name or IP for the serving certificate (repeatable)",
    )
    p.add_argument(
        "--advertise-address",
        default="",
        help="address written into admin.conf (default: the listen address, "
        "127.0.0.1 for a wildcard)",
    )
    p.add_argument("--service-cidr", default="10.43.0.0/16")
    p.add_argument(
        "--history", type=int, default=100_000, help="revisions of watch history to keep"
    )
    p.add_argument("--bookmark-interval", type=float, default=5.0)
    p.add_argument(
        "--metrics",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="serve /metrics and count every request for it (--no-metrics: off)",
    )
    for who in ("scheduler", "volcano"):
        p.add_argument(f"--{who}-metrics-listen", default="", help=f"HOST:PORT for the {who} "
                       "scheduler's /metrics over plain HTTP, besides its secure port (keep "
                       "it on loopback)")  # fmt: skip
    for who, port in (("scheduler", 10259), ("volcano-scheduler", 10260),
                      ("controller-manager", 10257)):  # fmt: skip
        p.add_argument(f"--{who}-secure-port", type=int, default=port,
                       help=f"the {who}'s HTTPS port for /metrics and health checks, "
                       "callers checked by TokenReview or client certificate, then "
                       "SubjectAccessReview (its --secure-port; 0: none)")  # fmt: skip
    p.add_argument("--component-bind-address", default="127.0.0.1",
                   help="the address the schedulers' and the controller manager's secure "
                   "ports listen on (their --bind-address; 127.0.0.1 as k3s and kubeadm)")  # fmt: skip
    p.add_argument(
        "--max-workers",
        type=int,
        default=1024,
        help="gRPC worker threads; every open watch holds one",
    )
    p.add_argument(
        "--disable",
        action="append",
        default=[],
        help="do not start this component (scheduler, volcano-scheduler, controllers), or "
        f"do not serve the metrics API built in ({METRICS_SERVER}: metrics.k8s.io, as k3s' "
        "--disable metrics-server leaves a cluster with no metrics-server); repeat for more",
    )
    p.add_argument(
        "--scheduler-config",
        default=None,
        metavar="FILE",
        help="the scheduler's profiles (its --config, as kube-scheduler's); "
        "fallback: the file named by $SKIFF_SCHEDULER_CONFIG",
    )
    p.add_argument(
        "--volcano-scheduler-config",
        default=None,
        metavar="FILE",
        help="the batch scheduler's volcano-scheduler.conf (its --config, vc-scheduler's "
        "--scheduler-conf); fallback: the file named by $SKIFF_VOLCANO_CONFIG",
    )
    p.add_argument(
        "--component-processes",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run the scheduler, the batch scheduler and the controller manager as child "
        "processes, each with its kubeconfig in --data-dir (restarted when they exit, stopped "
        "with the control plane), so that they use more than one core; "
        "--no-component-processes: as threads of this process; default: processes when this "
        "process may run on 2 CPUs or more, else threads",
    )
    p.add_argument(
        "--one-cpu",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep this process's threads on one CPU at a time (the one with the least other "
        "work, re-chosen every second; children started with every CPU): they share one GIL, "
        "and handing it between CPUs cost the API server a third of its CPU; --no-one-cpu: "
        "the kernel spreads them; nothing to do where this process may use one CPU (skiff up, "
        "whose process also runs the agent, never pins)",
    )
    p.add_argument(
        "--audit-log-path", default="", help="write an audit log (JSON lines) here; off when empty"
    )
    p.add_argument(
        "--audit-log-maxsize", type=int, default=100, help="MB after which the audit log is rotated"
    )
    p.add_argument(
        "--audit-log-maxbackup", type=int, default=5, help="rotated audit log files kept"
    )
    p.add_argument(
        "--audit-policy-file",
        default="",
        help="audit.k8s.io/v1 Policy (default: every request at Metadata)",
    )
    p.add_argument(
        "--token-ttl",
        type=token_ttl,
        default=DEFAULT_TOKEN_TTL,
        help="lifetime of the join token made at first start (<data-dir>/join-token), e.g. "
        "24h, 30m; 0: it never expires (kubeadm's --token-ttl)",
    )
    p.add_argument(
        "--encryption-provider-config",
        default="",
        help="EncryptionConfiguration (apiserver.config.k8s.io/v1) for encryption at rest "
        "(aescbc, secretbox, identity), as kube-apiserver's flag",
    )
    p.add_argument(
        "--secrets-encryption",
        action="store_true",
        help="encrypt Secrets at rest with a key made at first start in "
        "<data-dir>/encryption-config.json (k3s' flag); --encryption-provider-config wins",
    )
    p.add_argument(
        "--admission-control-config-file",
        default="",
        help="AdmissionConfiguration file (apiserver.config.k8s.io/v1) with the PodSecurity "
        "plugin's defaults and exemptions (default: privileged everywhere, kube-system exempt)",
    )
    p.add_argument("--log-level", default=os.environ.get("SKIFF_LOG_LEVEL", "INFO"))
    dataprep.add_flags(p)
    controllers.add_flags(p)
    return p  # fmt: skip


def flag_problem(args: argparse.Namespace) -> str:
    """What is wrong with the components' secure serving flags ("" : nothing)."""
    try:
        ipaddress.ip_address(args.component_bind_address)
    except ValueError:
        return f"--component-bind-address: {args.component_bind_address!r} is not an IP address"
    for who in ("scheduler", "volcano-scheduler", "controller-manager"):
        port = getattr(args, f"{who.replace('-', '_')}_secure_port")
        if not 0 <= port <= 65535:
            return f"--{who}-secure-port: {port} is not a port (0-65535; 0: none)"
    return ""
