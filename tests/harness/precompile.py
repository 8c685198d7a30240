"""Compile the tree once before the workers of a parallel run import it.

On a clean clone no module has its bytecode yet, and every pytest-xdist
worker collects the whole suite: each would compile every module of the
tree and rewrite the asserts of every test module itself (about 16 s of CPU
each, of 21 s of collection; 5 s with the bytecode there). `make test` runs
this first: the tree's modules compiled by `compileall`, then the test
modules whose rewritten bytecode is missing or stale collected once by
pytest itself (which writes it), in one process per CPU, each a share of the
files. What is fresh already is left alone, so a second run costs a look at
the files' times.

    python -m tests.harness.precompile [--jobs N]
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agent", "bench", "controlplane", "machinery", "proto", "runtime", "tests")
# What pytest rewrites (python_files and conftests); compileall's plain
# bytecode of these would never be read.
REWRITTEN = re.compile(r"(^|/)(test_[^/]*|conftest)\.py$")
PYTEST_PYC = f".{sys.implementation.cache_tag}-pytest-{pytest.__version__}.pyc"


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


def rewritten_pyc(source: Path) -> Path:
    """Where pytest keeps the assert-rewritten bytecode of `source`."""
    return source.parent / "__pycache__" / f"{source.stem}{PYTEST_PYC}"


def stale_test_modules(root: Path = ROOT) -> list[Path]:
    """Test modules whose rewritten bytecode is missing or older than them."""
    stale = []
    for path in sorted((root / "tests").rglob("test_*.py")):
        pyc = rewritten_pyc(path)
        try:
            if pyc.stat().st_mtime >= path.stat().st_mtime:
                continue
        except FileNotFoundError:
            pass
        stale.append(path)
    return stale


def shares(paths: list[Path], n: int) -> list[list[Path]]:
    """`paths` in at most `n` shares of about equal size in bytes."""
    out: list[list[Path]] = [[] for _ in range(max(1, n))]
    sizes = [0] * len(out)
    for path in sorted(paths, key=lambda p: -p.stat().st_size):
        i = sizes.index(min(sizes))
        out[i].append(path)
        sizes[i] += path.stat().st_size
    return [share for share in out if share]


def rewrite_tests(paths: list[Path], jobs: int, root: Path = ROOT) -> None:
    """Collect `paths` with pytest in `jobs` processes: collecting writes the
    rewritten bytecode of each module and of the conftests on its way. What
    fails to collect here fails in the run itself, which reports it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pytest",
                "--collect-only",
                "-q",
                "-p",
                "no:cacheprovider",
                *(str(p.relative_to(root)) for p in share),
            ],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for share in shares(paths, jobs)
    ]
    for proc in procs:
        proc.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    if sys.dont_write_bytecode:
        print("precompile: PYTHONDONTWRITEBYTECODE is set, nothing written", file=sys.stderr)
        return 0
    compile_tree(ROOT, args.jobs)
    stale = stale_test_modules(ROOT)
    if stale:
        rewrite_tests(stale, args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
