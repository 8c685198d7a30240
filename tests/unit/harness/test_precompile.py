"""Compiling the tree once before a parallel run (tests/harness/precompile.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.harness.precompile import (
    compile_tree,
    main,
    rewrite_tests,
    rewritten_pyc,
    shares,
    stale_test_modules,
)


def _tree(root: Path) -> None:
    (root / "tests" / "harness").mkdir(parents=True)
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "harness" / "__init__.py").write_text("")
    (root / "tests" / "harness" / "helper.py").write_text("X = 1\n")
    (root / "tests" / "conftest.py").write_text("")
    (root / "tests" / "test_a.py").write_text("def test_a():\n    assert 1 + 1 == 2\n")
    (root / "tests" / "test_b.py").write_text("def test_b():\n    assert True\n")
    (root / "agent").mkdir()
    (root / "agent" / "__init__.py").write_text("")
    (root / "agent" / "mod.py").write_text("Y = 2\n")


@pytest.fixture
def writing_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)


def test_the_tree_compiled_but_the_modules_pytest_rewrites(
    tmp_path: Path, writing_bytecode: None
) -> None:
    _tree(tmp_path)
    assert compile_tree(tmp_path, jobs=1)
    tag = sys.implementation.cache_tag
    assert (tmp_path / "agent" / "__pycache__" / f"mod.{tag}.pyc").exists()
    assert (tmp_path / "tests" / "harness" / "__pycache__" / f"helper.{tag}.pyc").exists()
    cached = {p.name for p in (tmp_path / "tests" / "__pycache__").iterdir()}
    assert cached == {f"__init__.{tag}.pyc"}  # not test_a, test_b, conftest


def test_test_modules_rewritten_by_pytest_once(tmp_path: Path, writing_bytecode: None) -> None:
    _tree(tmp_path)
    a, b = tmp_path / "tests" / "test_a.py", tmp_path / "tests" / "test_b.py"
    assert stale_test_modules(tmp_path) == [a, b]
    rewrite_tests([a, b], jobs=2, root=tmp_path)
    # Where pytest itself reads it from: the name is right.
    assert rewritten_pyc(a).exists() and rewritten_pyc(b).exists()
    assert rewritten_pyc(tmp_path / "tests" / "conftest.py").exists()
    assert stale_test_modules(tmp_path) == []
    # An edited module is stale again.
    later = rewritten_pyc(a).stat().st_mtime + 5
    os.utime(a, (later, later))
    assert stale_test_modules(tmp_path) == [a]


def test_shares_are_balanced_by_size(tmp_path: Path) -> None:
    files = []
    for name, size in (("a", 100), ("b", 60), ("c", 50), ("d", 10)):
        path = tmp_path / f"test_{name}.py"
        path.write_text("#" * size)
        files.append(path)
    got = shares(files, 2)
    assert [[p.name for p in share] for share in got] == [
        ["test_a.py", "test_d.py"],
        ["test_b.py", "test_c.py"],
    ]
    assert shares(files[:1], 4) == [files[:1]]


def test_nothing_written_where_bytecode_is_off(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert main([]) == 0
    assert "PYTHONDONTWRITEBYTECODE is set" in capsys.readouterr().err
