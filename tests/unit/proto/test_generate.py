"""The stub generator and the identity of the `proto` package.

Checks that the committed stubs are exactly what `python -m proto.generate`
produces now, that `--check` notices edited, missing and stale stubs, and
that `import proto` finds ours rather than PyPI proto-plus's `proto`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import proto
from proto import generate

REPO = Path(__file__).resolve().parents[3]


def _copy_sources(dest: Path) -> Path:
    """A scratch repository root holding a copy of proto/ (sources and stubs)."""
    shutil.copytree(REPO / "proto", dest / "proto", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_proto_package_is_ours() -> None:
    assert Path(proto.__file__).resolve() == REPO / "proto" / "__init__.py"
    assert generate.ROOT == REPO


def test_checked_in_stubs_equal_a_fresh_generation(capsys: pytest.CaptureFixture[str]) -> None:
    assert generate.main(["--check"]) == 0
    assert capsys.readouterr().out == ""


def test_every_proto_is_found() -> None:
    sources = [p.as_posix() for p in generate.proto_sources()]
    assert "proto/runtime/v1/api.proto" in sources
    assert "proto/agent/v1/agent.proto" in sources
    assert sources == sorted(sources)


def test_generation_is_deterministic(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    files = generate.generate_into(first)
    assert files == generate.generate_into(second)
    assert Path("proto/runtime/v1/api_pb2_grpc.pyi") in files
    for rel in files:
        assert (first / rel).read_bytes() == (second / rel).read_bytes(), rel


def test_generated_imports_are_absolute() -> None:
    grpc_module = (REPO / "proto/runtime/v1/api_pb2_grpc.py").read_text()
    assert "from proto.runtime.v1 import api_pb2 as" in grpc_module
    assert "\nimport api_pb2" not in grpc_module


def test_check_reports_edited_missing_and_stale_stubs(tmp_path: Path) -> None:
    root = _copy_sources(tmp_path)
    assert generate.check(root) == []

    stub = root / "proto/agent/v1/agent_pb2.py"
    stub.write_bytes(stub.read_bytes() + b"# edited\n")
    (root / "proto/agent/v1/agent_pb2_grpc.pyi").unlink()
    (root / "proto/runtime/v1/api.proto").rename(root / "proto/runtime/v1/api.proto.bak")
    (root / "proto/agent/v1/__init__.py").unlink()

    problems = generate.check(root)
    assert problems == sorted(problems)
    assert "proto/agent/v1/agent_pb2.py: differs from a fresh generation" in problems
    assert "proto/agent/v1/agent_pb2_grpc.pyi: missing (not checked in)" in problems
    assert "proto/agent/v1/__init__.py: missing package __init__.py" in problems
    for suffix in generate.GENERATED_SUFFIXES:
        assert f"proto/runtime/v1/api{suffix}: stale (its .proto is gone)" in problems
    assert len(problems) == 7


def test_generate_repairs_the_tree(tmp_path: Path) -> None:
    root = _copy_sources(tmp_path)
    stub = root / "proto/agent/v1/agent_pb2.py"
    stub.write_bytes(b"# edited\n")
    (root / "proto/agent/v1/__init__.py").unlink()
    stale = root / "proto/gone/v1/gone_pb2.py"
    stale.parent.mkdir(parents=True)
    stale.write_text("# left over\n")

    changes = generate.generate(root)

    assert changes == [
        "wrote proto/agent/v1/agent_pb2.py",
        "removed stale proto/gone/v1/gone_pb2.py",
        "created proto/agent/v1/__init__.py",
    ]
    assert generate.check(root) == []
    assert generate.generate(root) == []
