"""Write tests/harness/module_times.json from a run's JUnit XML report.

The parallel run hands the longest modules out first (xdist_scopes.py); how
long each takes comes from a measured run:

    make pytest PYTEST_ARGS=--junitxml=/tmp/run.xml
    .venv/bin/python -m tests.harness.module_times /tmp/run.xml

A test's time in the report is its setup, call and teardown, so a module's
fixtures count once, in its first test. Modules under a second are left out
(their guess from the number of tests is as good).
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from tests.harness.xdist_scopes import TIMES_FILE

ROOT = Path(__file__).resolve().parents[2]
LEAST = 1.0


def module_path(classname: str, root: Path = ROOT) -> str | None:
    """`tests.a.test_b` or `tests.a.test_b.TestC` -> `tests/a/test_b.py`."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        candidate = "/".join(parts[:end]) + ".py"
        if (root / candidate).is_file():
            return candidate
    return None


def module_times(reports: list[Path], root: Path = ROOT) -> dict[str, float]:
    """Seconds per module, summed over the reports' test cases."""
    total: dict[str, float] = defaultdict(float)
    for report in reports:
        for case in ET.parse(report).iter("testcase"):
            module = module_path(case.get("classname", ""), root)
            if module is not None:
                total[module] += float(case.get("time", "0"))
    return {m: round(s, 1) for m, s in sorted(total.items()) if s >= LEAST}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("reports", nargs="+", type=Path, help="JUnit XML reports of a run")
    parser.add_argument("--out", type=Path, default=TIMES_FILE)
    args = parser.parse_args(argv)
    times = module_times(args.reports)
    if not times:
        print("module_times: no test case of this tree in the reports", file=sys.stderr)
        return 1
    args.out.write_text(json.dumps(times, indent=1) + "\n")
    print(f"{len(times)} modules, {sum(times.values()):.0f} s, written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
