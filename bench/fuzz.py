"""The fuzz campaign of issue 17: at least 10,000 generated inputs per target
(tar layers, image manifests and indexes, registry responses, CRI request
fields, CNI configs and CNI_ARGS, DNS messages, SPDY and WebSocket frames,
API objects and patches, the agent endpoint's HTTP, Kubernetes' protobuf
bodies),
each of which must get a clear error or a correct result.

Per target it prints inputs tried, rejections (clear errors), crashes
(must be 0), hangs (an input over 5 s; must be 0) and leaked fds, threads
and mounts (must be 0); the last line is one JSON object of figure ->
number. No peer to compare with: the figures are absolute. The targets are
tests/fuzz/targets.py; `make test` runs a short seeded run of each
(tests/fuzz/test_fuzz.py).

    .venv/bin/python -m bench.fuzz [--inputs 10000] [--seed 1] [--only NAME]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from tests.fuzz.runner import run
from tests.fuzz.targets import TARGETS


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--inputs", type=int, default=10_000, help="inputs per target")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", action="append", default=None, help="run only these targets")
    a = ap.parse_args(argv)
    targets = [t for t in TARGETS if not a.only or t.name in a.only]
    figures: dict[str, float] = {}
    cols = ["inputs", "rejections", "crashes", "hangs", "leaked_fds", "leaked_threads",
            "leaked_mounts"]  # fmt: skip
    print(f"{'target':<20}" + "".join(f"{c:>15}" for c in cols) + f"{'seconds':>10}")
    failed = False
    for t in targets:
        start = time.monotonic()
        stats = run(t, a.inputs, a.seed)
        took = time.monotonic() - start
        row = stats.row()
        print(f"{t.name:<20}" + "".join(f"{row[c]:>15}" for c in cols) + f"{took:>10.1f}")
        sys.stdout.flush()
        for c in cols:
            figures[f"{t.name}.{c}"] = row[c]
        figures[f"{t.name}.seconds"] = round(took, 1)
        if (
            stats.crashes
            or stats.hangs
            or stats.leaked_fds
            or stats.leaked_threads
            or stats.leaked_mounts
        ):
            failed = True
            if stats.first_crash:
                print(f"  first crash of {t.name}:\n{stats.first_crash}", file=sys.stderr)
    print(json.dumps(figures))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
