"""Compile the tree once before the workers of a parallel run import it.

On a clean clone no module has its bytecode yet, and every pytest-xdist
worker collects the whole suite: each would compile every module of the
tree for itself (7.5 s of CPU of a worker's 21 s of collection, on a quiet
machine). `make test` runs this first: `compileall` in one process per CPU,
a second or two; what is fresh already is only looked at. The test modules
themselves are left to the workers: pytest rewrites their asserts into
bytecode of its own, and rewriting them here would mean importing the whole
suite once more (a collection), which costs more than it saves.

    python -m tests.harness.precompile [--jobs N]
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agent", "bench", "controlplane", "machinery", "proto", "runtime", "tests")
# What pytest rewrites (python_files and conftests); compileall's plain
# bytecode of these would never be read.
REWRITTEN = re.compile(r"(^|/)(test_[^/]*|conftest)\.py$")


def compile_tree(root: Path = ROOT, jobs: int = 0) -> bool:
    """Plain bytecode of every module of the tree but the rewritten ones."""
    ok = True
    for package in PACKAGES:
        if (root / package).is_dir():
            ok &= bool(compileall.compile_dir(root / package, quiet=1, rx=REWRITTEN, workers=jobs))
    skiff = root / "skiff.py"
    if skiff.exists():
        ok &= bool(compileall.compile_file(skiff, quiet=1))
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    if sys.dont_write_bytecode:
        print("precompile: PYTHONDONTWRITEBYTECODE is set, nothing written", file=sys.stderr)
        return 0
    compile_tree(ROOT, args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
