"""The CPU cost of quota admission per pod create, in this process (for
bench.apiserver --quota, issue 29).

`bench.apiserver --quota` compares creates/s over HTTP into a namespace with
and without a ResourceQuota; on a shared 2-core machine its rounds spread by
about what it tries to show. This measures the admission itself: a registry
on a SQLite store in a temporary directory, with the default admission
plugins, creating the same pod as bench.apiserver into a namespace without a
quota and into one whose quota limits pods, count/pods, requests.cpu and
requests.memory (charged on every create), in interleaved rounds. The
figure is the process's CPU time per create (the store's writer thread
included), so a busy machine moves it less than wall time; `dry_run` is the
same with dryRun (the quota evaluated, never charged or stored). The
difference between the namespaces is what the quota costs.

`admit` is the quota's own work for one pod, without the store: what the
pod uses, its evaluation against the quota and the quota written as
charged (encoded), on the plugin's kept copy of the quota (thread CPU time,
the fastest of the rounds: the least disturbed estimate of the work).

    python -m bench.quota_cost [--creates 400] [--rounds 8]

Runs against any tree on PYTHONPATH (`PYTHONPATH=<old checkout>` for a
before figure). The last line is one JSON object of figure -> number.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.pod_security import pod
from controlplane.api.kinds import by_kind
from controlplane.api.quantity import parse_quantity
from controlplane.apiserver.admission import default_plugins
from controlplane.apiserver.codec import encode
from controlplane.apiserver.quota_admission import QuotaAdmission, _charged
from controlplane.apiserver.registry import Registry
from controlplane.storage.sqlite import SqliteStore

QUOTA = {"pods": "1000000", "count/pods": "1000000", "requests.cpu": "1000000",
         "requests.memory": "1000Ti"}  # fmt: skip
NAMESPACES = ("bench", "quota")


def _registry(work: Path) -> tuple[Registry, SqliteStore]:
    store = SqliteStore(work / "state.db")
    reg = Registry(store)
    reg.plugins = default_plugins()
    for ns in NAMESPACES:
        reg.create("Namespace", {"metadata": {"name": ns}})
    reg.create("ResourceQuota", {"metadata": {"name": "q", "namespace": "quota"},
                                 "spec": {"hard": QUOTA}})  # fmt: skip
    # The status the quota controller's first count writes (no controllers run here).
    reg.patch("ResourceQuota", "q", {"status": {"hard": QUOTA, "used": dict.fromkeys(QUOTA, "0")}},
              "quota", subresource="status")  # fmt: skip
    return reg, store


def _per_create_us(create: Callable[[str, dict[str, Any]], object], ns: str, n: int,
                   tag: str) -> float:  # fmt: skip
    pods = [pod(f"{tag}-{i}", i) for i in range(n)]
    start = time.process_time()
    for p in pods:
        create(ns, p)
    return (time.process_time() - start) / n * 1e6


def admit_us(reg: Registry, calls: int, rounds: int) -> float:
    """CPU us per pod of QuotaAdmission's own work (no store write)."""
    plugin = next(p for p in reg.plugins if isinstance(p, QuotaAdmission))
    info = by_kind("Pod")
    made = pod("admit", 0)
    made["metadata"]["namespace"] = "quota"
    best = float("inf")
    for _ in range(rounds):
        start = time.thread_time()
        for _ in range(calls):
            ask = plugin._ask(reg, info, made, None, join=True)
            assert ask is not None and ask.known is not None
            states = {n: s.copy() for n, s in ask.known.states.items()}
            plugin._evaluate(ask, states)
            assert ask.error is None, ask.error
            for state in states.values():
                encode(_charged(state))
        best = min(best, (time.thread_time() - start) / calls * 1e6)
    return best


def measure(creates: int, rounds: int) -> dict[str, float]:
    """Figures: CPU us per create (and per dry-run create) without and with a quota."""
    work = Path(tempfile.mkdtemp(prefix="skiff-quota-cost-"))
    try:
        reg, store = _registry(work)
        modes: dict[str, Callable[[str, dict[str, Any]], object]] = {
            "create": lambda ns, p: reg.create("Pod", p, ns),
            "dry_run": lambda ns, p: reg.create("Pod", p, ns, dry_run=True),
        }
        runs: dict[str, list[float]] = {}
        for i in range(rounds + 1):  # the first round warms caches and is dropped
            order = NAMESPACES if i % 2 == 0 else NAMESPACES[::-1]
            for mode, create in modes.items():
                for ns in order:
                    us = _per_create_us(create, ns, creates, f"r{i}-{mode.replace('_', '-')}")
                    if i:
                        runs.setdefault(f"{mode}_{ns}", []).append(us)
        used = reg.get("ResourceQuota", "q", "quota")[0]
        admit = admit_us(reg, 2000, rounds)
        store.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    # Every create was charged, and no dry run.
    charged = parse_quantity(json.loads(used)["status"]["used"]["pods"])
    assert charged == (rounds + 1) * creates, (charged, rounds, creates)
    figures: dict[str, float] = {"admit_cpu_us": round(admit, 1)}
    for key, values in sorted(runs.items()):
        figures[f"{key}_cpu_us"] = round(statistics.median(values), 1)
        figures[f"{key}_cpu_us_min"] = round(min(values), 1)
        figures[f"{key}_spread_pct"] = round(
            100 * (max(values) - min(values)) / statistics.median(values), 1
        )
    for mode in modes:
        # Paired by round (both namespaces measured back to back), then the median.
        diffs = [q - b for q, b in zip(runs[f"{mode}_quota"], runs[f"{mode}_bench"], strict=True)]
        figures[f"{mode}_quota_cost_cpu_us"] = round(statistics.median(diffs), 1)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--creates", type=int, default=400, help="creates per namespace a round")
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args(argv)
    figures = measure(args.creates, args.rounds)
    for mode in ("create", "dry_run"):
        print(f"{mode:8} CPU us per pod: without a quota {figures[f'{mode}_bench_cpu_us']:.0f}, "
              f"with one {figures[f'{mode}_quota_cpu_us']:.0f} (spread "
              f"{figures[f'{mode}_quota_spread_pct']:.0f}%); the quota costs "
              f"{figures[f'{mode}_quota_cost_cpu_us']:.0f} us")  # fmt: skip
    print(f"admit    CPU us per pod, the quota's own work without the store: "
          f"{figures['admit_cpu_us']:.1f}")  # fmt: skip
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
