"""`python -m runtime.linux.cgroup_tool apply JSON`: the runtime's cgroup
code (cgroups.open_cgroup, v1 and v2) for a process that may not import
the runtime, the node agent: it keeps the QoS cgroup tree (kubepods,
burstable, besteffort, pod cgroups) through this command, as it keeps the
node's routes through `skiff-cni reconcile`.

JSON maps a cgroup path (relative to the hierarchy root) to the Resources
fields to apply (cpu_shares, cpu_quota, cpu_period, memory_limit,
pids_limit); each cgroup is created if missing, parents first, in the
order given. Exit status 1 with one line on stderr naming the cgroup if a
write fails.
"""

from __future__ import annotations

import json
import sys

from runtime.linux.cgroups import Resources, open_cgroup

FIELDS = ("cpu_shares", "cpu_quota", "cpu_period", "memory_limit", "pids_limit")


def apply(tree: dict[str, dict[str, int]]) -> None:
    for rel, values in tree.items():
        unknown = set(values) - set(FIELDS)
        if unknown or ".." in rel.split("/"):
            raise ValueError(f"{rel}: bad request {sorted(unknown) or 'path'}")
        cg = open_cgroup(rel)
        cg.create()
        v = {k: int(x) for k, x in values.items()}
        cg.apply(
            Resources(
                cpu_shares=v.get("cpu_shares", 0),
                cpu_quota=v.get("cpu_quota", 0),
                cpu_period=v.get("cpu_period", 0),
                memory_limit=v.get("memory_limit", 0),
                pids_limit=v.get("pids_limit", 0),
            )
        )


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "apply":
        print("usage: cgroup_tool apply JSON", file=sys.stderr)
        return 2
    try:
        apply(json.loads(argv[1]))
    except (OSError, ValueError, TypeError) as err:
        print(f"cgroup_tool: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
