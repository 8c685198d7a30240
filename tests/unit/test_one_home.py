"""Issue 27's floor: a shared idea has one home. The renames that publish a
file (os.replace/os.rename), the C library through ctypes, and Kubernetes'
time format written out each live in one machinery module; a module that
writes its own copy fails here, naming the file and line."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# (what, pattern, its one home)
RULES = [
    (
        "a rename that publishes a file",
        r"\b(os|posix)\.(replace|rename)\(",
        "machinery/atomicfile.py",
    ),
    ("a ctypes import", r"^\s*(import ctypes|from ctypes\b)", "machinery/libc.py"),
    ("RFC 3339 written out", r"%Y-%m-%dT%H:%M:%S", "machinery/rfc3339.py"),
]


def shipped_sources() -> list[Path]:
    """The tracked Python files outside tests/ and generated stubs."""
    out = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    if not out.strip():
        pytest.skip("not a git checkout: the tracked sources cannot be listed")
    return [ROOT / line for line in out.split()
            if not line.startswith(("tests/", "bench/")) and "_pb2" not in line]  # fmt: skip


@pytest.mark.parametrize(("what", "pattern", "home"), RULES, ids=[r[2] for r in RULES])
def test_one_home(what: str, pattern: str, home: str) -> None:
    found = re.compile(pattern, re.MULTILINE)
    strays = []
    for path in shipped_sources():
        rel = path.relative_to(ROOT).as_posix()
        if rel == home or not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        for m in found.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            if not text.splitlines()[line - 1].lstrip().startswith("#"):
                strays.append(f"{rel}:{line}")
    assert not strays, f"{what} outside {home}: {', '.join(strays)}"
