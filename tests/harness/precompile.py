"""Compile the tree once before the workers of a parallel run import it.

On a clean clone no module has its bytecode yet, and every pytest-xdist
worker collects the whole suite: each would compile every module of the
tree for itself (7.5 s of CPU of a worker's 21 s of collection, on a quiet
machine). `make test` runs this first: `compileall` in one process per CPU,
a second or two; what is fresh already is only looked at. The test modules
and conftests, whose asserts pytest rewrites into bytecode of its own (a
`-pytest-<version>.pyc` beside the plain one), are rewritten here too, with
pytest's own rewriter and without importing them: on a clean clone each
worker would otherwise rewrite all of them for itself (16 s of CPU of a
worker's 26 s of collection); so are the installed pytest plugins'
modules (Hypothesis, xdist), which a fresh venv has no rewritten bytecode
of. Where pytest's rewriter is not what this expects, that step is skipped
and the workers rewrite as before.

    python -m tests.harness.precompile [--jobs N]
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import SimpleNamespace

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


def _rewrite(paths: list[Path]) -> bool:
    """pytest's rewritten bytecode of `paths`, written where pytest reads it
    (pytest checks it against the source's hash, so a stale one is redone)."""
    from _pytest.assertion import rewrite

    quiet = SimpleNamespace(trace=lambda *_: None)
    ok = True
    for path in paths:
        pyc = rewrite.get_cache_dir(path) / (path.name[:-3] + rewrite.PYC_TAIL)
        if rewrite._read_pyc(path, pyc) is not None:
            continue
        try:
            source_hash, co = rewrite._rewrite_test(path, None)  # type: ignore[arg-type]
        except SyntaxError:
            ok = False  # pytest reports it where the module is collected
            continue
        pyc.parent.mkdir(exist_ok=True)
        ok &= rewrite._write_pyc(quiet, co, source_hash, pyc)  # type: ignore[arg-type]
    return ok


def plugin_files() -> list[Path]:
    """The modules of the installed pytest plugins (distributions with a
    `pytest11` entry point: Hypothesis, pytest-xdist...), which pytest
    rewrites too, as it finds them (`_iter_rewritable_modules`); empty where
    pytest's helper is not what this expects."""
    from importlib import metadata

    try:
        from _pytest.config import _iter_rewritable_modules
    except ImportError:
        return []
    found = []
    for dist in metadata.distributions():
        if not any(ep.group == "pytest11" for ep in dist.entry_points):
            continue
        files = list(dist.files or [])
        tops = set(_iter_rewritable_modules([str(f) for f in files]))
        for f in files:
            if f.suffix == ".py" and f.parts[0].removesuffix(".py") in tops:
                found.append(Path(str(dist.locate_file(f))))
    return sorted(found)


def rewrite_tests(root: Path = ROOT, jobs: int = 0, plugins: bool = True) -> bool:
    """pytest's rewritten bytecode of every test module and conftest under
    `root`/tests, and with `plugins` of the installed pytest plugins (on a
    fresh venv each worker rewrote the ones it imports: 1.5 s of CPU apiece
    for Hypothesis and xdist), in `jobs` processes (0: one per CPU)."""
    try:
        from _pytest.assertion import rewrite

        needed = ("get_cache_dir", "PYC_TAIL", "_read_pyc", "_rewrite_test", "_write_pyc")
        if not all(hasattr(rewrite, name) for name in needed):
            return True
    except ImportError:
        return True
    found = sorted(p for p in (root / "tests").rglob("*.py") if REWRITTEN.search(p.as_posix()))
    if plugins:
        found += plugin_files()
    if not found:
        return True
    jobs = jobs or os.cpu_count() or 1
    chunks = [found[i::jobs] for i in range(jobs)]
    if jobs == 1:
        return _rewrite(found)
    with ProcessPoolExecutor(jobs) as pool:
        return all(pool.map(_rewrite, chunks))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    if sys.dont_write_bytecode:
        print("precompile: PYTHONDONTWRITEBYTECODE is set, nothing written", file=sys.stderr)
        return 0
    compile_tree(ROOT, args.jobs)
    rewrite_tests(ROOT, args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
