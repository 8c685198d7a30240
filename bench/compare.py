"""Is any benchmark worse? Runs benchmarks on two revisions of this tree in
alternating rounds on the same machine, so both see the same load, and
compares the figures of their last JSON lines.

    python -m bench.compare --base d785055 --rounds 3 \\
        --bench "pod_startup --pods 20 --only skiff" --bench "cni --iterations 20"

`--head REV` compares two revisions, neither of them this checkout (the
cost of one merge, say: `--base M^1 --head M`); both are checked out, and
this checkout's bench.compare drives them.

`--head-args` are added to every head run only: a feature the base lacks,
switched on (`--head-args "--pod-security restricted"`); `--base-args` to
every base run only (one revision against itself with a feature off and on:
`--base R --head R`).

The base revision is checked out into a temporary git worktree (removed at
the end) and run with its own tree first on PYTHONPATH, so every process a
benchmark starts runs that revision's code; the head is this checkout.
Rounds alternate which side goes first. A figure's median over the rounds
is compared; a figure whose name says it is a rate (`per_s`, `rps`,
`throughput`, `_ops`) or a ratio of rates (`_quota_ratio`, `_metrics_ratio`)
is better higher, any other (times, bytes, counts of
work) better lower. A figure that moved more than `--tolerance` the wrong
way is marked "worse". A benchmark or figure missing on one side (new in
the head, say) is listed without a ratio.

The last line is one JSON object: `<bench>.<figure>` -> head/base ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

HEAD = Path(__file__).resolve().parent.parent
RATE_WORDS = ("per_s", "per_sec", "rps", "throughput", "_ops", "qps")
# Ratios of two rates (creates/s with a feature over without): better higher,
# unlike the ratios of two times (a p50 over the peer's), which are better lower.
RATE_RATIOS = ("_quota_ratio", "_metrics_ratio")


@dataclass
class Side:
    name: str
    tree: Path
    figures: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # bench -> fig -> runs
    failures: dict[str, str] = field(default_factory=dict)


@contextmanager
def worktree(rev: str) -> Iterator[Path]:
    tmp = Path(tempfile.mkdtemp(prefix="skiff-bench-base-"))
    tree = tmp / "tree"
    subprocess.run(["git", "-C", str(HEAD), "worktree", "add", "--detach", str(tree), rev],
                   check=True, capture_output=True)  # fmt: skip
    try:
        yield tree
    finally:
        subprocess.run(["git", "-C", str(HEAD), "worktree", "remove", "--force", str(tree)],
                       check=False, capture_output=True)  # fmt: skip
        subprocess.run(["rm", "-rf", str(tmp)], check=False)


def last_json(stdout: str) -> dict[str, float]:
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            data = json.loads(line)
            return {k: float(v) for k, v in data.items() if isinstance(v, int | float)}
    raise ValueError("no JSON object on any line")


def run_one(side: Side, spec: str, timeout: float, extra: str = "") -> None:
    module, *args = shlex.split(spec)
    args += shlex.split(extra)
    env = dict(os.environ, PYTHONPATH=str(side.tree))
    argv = [sys.executable, "-m", f"bench.{module}", *args]
    try:
        done = subprocess.run(argv, cwd=side.tree, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)  # fmt: skip
        if done.returncode != 0:
            raise ValueError(f"exit {done.returncode}: {done.stderr.strip()[-300:]}")
        figures = last_json(done.stdout)
    except (ValueError, subprocess.TimeoutExpired) as err:
        side.failures[spec] = str(err)
        print(f"  {side.name}: {spec}: {err}", file=sys.stderr)
        return
    runs = side.figures.setdefault(spec, {})
    for name, value in figures.items():
        runs.setdefault(name, []).append(value)


def better_higher(figure: str) -> bool:
    low = figure.lower()
    return any(w in low for w in RATE_WORDS) or low.endswith(RATE_RATIOS)


def compare(base: Side, head: Side, specs: list[str], tolerance: float) -> dict[str, float]:
    ratios: dict[str, float] = {}
    rows = [("benchmark", "figure", "base", "head", "head/base", "")]
    for spec in specs:
        label = shlex.split(spec)[0]
        b, h = base.figures.get(spec, {}), head.figures.get(spec, {})
        for fig in sorted(set(b) | set(h)):
            if fig not in b or fig not in h:
                side = "head" if fig in h else "base"
                rows.append((label, fig, "-" if side == "head" else "", "", "", f"only in {side}"))
                continue
            mb, mh = statistics.median(b[fig]), statistics.median(h[fig])
            ratio = mh / mb if mb else float("inf") if mh else 1.0
            worse = ratio < 1 - tolerance if better_higher(fig) else ratio > 1 + tolerance
            ratios[f"{label}.{fig}"] = round(ratio, 3)
            rows.append((label, fig, f"{mb:.4g}", f"{mh:.4g}", f"{ratio:.2f}",
                         "worse" if worse else ""))  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    for s in (base, head):
        for spec, why in s.failures.items():
            print(f"{s.name} failed {spec}: {why}")
    return ratios


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--base", required=True, help="the revision to compare against")
    p.add_argument("--bench", action="append", required=True,
                   help='a bench module and its arguments, e.g. "cni --iterations 20"')  # fmt: skip
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--tolerance", type=float, default=0.10, help="the move called worse")
    p.add_argument("--head-args", default="", help="added to the head's runs only")
    p.add_argument("--base-args", default="", help="added to the base's runs only")
    p.add_argument(
        "--head", default="", help="a revision to run as the head (default: this checkout)"
    )
    p.add_argument("--timeout", type=float, default=1800, help="per run (s)")
    a = p.parse_args(argv)
    with worktree(a.base) as tree, worktree(a.head) if a.head else nullcontext(HEAD) as top:
        base, head = Side(f"base {a.base}", tree), Side(f"head {a.head}" if a.head else "head", top)
        for rnd in range(a.rounds):
            order = (base, head) if rnd % 2 == 0 else (head, base)
            for spec in a.bench:
                for side in order:
                    print(f"round {rnd + 1}/{a.rounds}: {side.name}: {spec}", file=sys.stderr)
                    run_one(side, spec, a.timeout, a.head_args if side is head else a.base_args)
        ratios = compare(base, head, a.bench, a.tolerance)
    print(json.dumps(ratios, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
