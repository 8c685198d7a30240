"""Compiling the tree once before a parallel run (tests/harness/precompile.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.harness.precompile import compile_tree, main, plugin_files, rewrite_tests


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


def test_the_test_modules_rewritten_as_pytest_reads_them(
    tmp_path: Path, writing_bytecode: None
) -> None:
    from _pytest.assertion import rewrite

    _tree(tmp_path)
    assert rewrite_tests(tmp_path, jobs=2, plugins=False)
    cache = tmp_path / "tests" / "__pycache__"
    names = {p.name for p in cache.iterdir()}
    assert names == {f"{m}{rewrite.PYC_TAIL}" for m in ("conftest", "test_a", "test_b")}
    co = rewrite._read_pyc(tmp_path / "tests" / "test_a.py", cache / f"test_a{rewrite.PYC_TAIL}")
    assert co is not None and "@pytest_ar" in co.co_names  # the asserts rewritten
    # A changed module's stale bytecode is redone.
    (tmp_path / "tests" / "test_a.py").write_text("def test_a():\n    assert 2 + 2 == 4\n")
    assert rewrite_tests(tmp_path, jobs=1, plugins=False)
    co = rewrite._read_pyc(tmp_path / "tests" / "test_a.py", cache / f"test_a{rewrite.PYC_TAIL}")
    assert co is not None


def test_the_pytest_plugins_modules_are_rewritten_too() -> None:
    """The modules pytest rewrites as plugins': Hypothesis's and xdist's
    (both in the dev extras), not pytest's own nor a plain library's."""
    import hypothesis
    import xdist

    found = set(plugin_files())
    assert Path(hypothesis.__file__).resolve() in {p.resolve() for p in found}
    assert Path(xdist.__file__).resolve() in {p.resolve() for p in found}
    assert not any(p.parent.name == "_pytest" for p in found)
    assert not any("/grpc/" in p.as_posix() for p in found)


def test_nothing_written_where_bytecode_is_off(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert main([]) == 0
    assert "PYTHONDONTWRITEBYTECODE is set" in capsys.readouterr().err
