"""`skiff down [--data-dir DIR]`: remove everything a skiff instance left on
the host, pods included, once `skiff up` is gone (k3s' killall script).

It reads the names the instance recorded (DIR/instance.json, written by
`skiff up` at start), or derives them from the data dir as skiff up does
when there is no record, and removes processes, mounts, network, iptables
chains, CNI files and cgroups (host_state.teardown). It keeps the data dir
itself (the cluster's database, images, logs), as killall keeps k3s' data.
Idempotent: a second run finds nothing and says so. It refuses while a
`skiff up` still runs with that data dir.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from agent.host_state import RECORD, Instance, leftovers, teardown
from agent.instance_lock import Busy, InstanceLock
from agent.layout import Layout

DEFAULT_CLUSTER_CIDR = "10.244.0.0/16"
DEFAULT_SERVICE_CIDR = "10.43.0.0/16"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="skiff down",
        description="Remove what a stopped skiff instance left on this host, pods included.",
    )
    p.add_argument("--data-dir", help="the --data-dir of the skiff up to clean up after")
    p.add_argument("--log-level", default="warning")
    return p


def instance_for(data_dir: str | None) -> Instance:
    """The instance's record, or the names skiff up derives with its defaults."""
    lay = Layout.under(Path(data_dir)) if data_dir else Layout.standard()
    try:
        return Instance.load(lay.data_dir / RECORD)
    except FileNotFoundError:
        dns = str(ipaddress.ip_network(DEFAULT_SERVICE_CIDR)[10])
        return Instance.of(lay, DEFAULT_CLUSTER_CIDR, DEFAULT_SERVICE_CIDR, dns)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(message)s")
    if os.geteuid() != 0:
        print("skiff down: must run as root", file=sys.stderr)
        return 1
    try:
        inst = instance_for(args.data_dir)
    except ValueError as err:
        print(f"skiff down: {err}", file=sys.stderr)
        return 1
    lock = InstanceLock(inst.data_dir)
    try:
        if inst.data_dir.is_dir():
            lock.acquire()
    except Busy as err:
        print(f"skiff down: {err}: stop it first (Ctrl-C or SIGTERM)", file=sys.stderr)
        return 1
    try:
        found = leftovers(inst)
        done = teardown(inst)
    except (OSError, RuntimeError) as err:
        print(f"skiff down: {err}", file=sys.stderr)
        return 1
    finally:
        lock.release()
    if not found and not done:
        print(f"skiff down: nothing of {inst.data_dir} left on this host")
    for line in done:
        print(f"removed {line}")
    return 0
