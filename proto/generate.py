"""Generate (or check) the Python stubs of every .proto under proto/.

Run from the repository root as `python -m proto.generate` to regenerate, or with
`--check` to verify that the checked-in stubs equal a fresh generation
(exit status 1 and a list of the differing files otherwise).

protoc runs in-process (grpc_tools.protoc) with the repository root as the
only import root besides grpc_tools' bundled well-known types, so generated
imports are absolute (`from proto.runtime.v1 import api_pb2`) while each
.proto keeps its own package (`runtime.v1`), which is what fixes the gRPC
method paths (`/runtime.v1.RuntimeService/RunPodSandbox`). Besides
`*_pb2.py` and `*_pb2_grpc.py` it asks mypy-protobuf for `.pyi` stubs.

Generation always goes to a temporary directory first; the tree is then
brought in line with it: changed files are rewritten, stubs whose .proto is
gone are deleted, missing package `__init__.py` files are created. This module
must never touch anything under proto/ other than generated stubs and empty
`__init__.py` files, and its output must depend only on the .proto sources and
the pinned tool versions (no timestamps, no absolute paths).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto"

# What protoc and its plugins write for each foo.proto.
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")


class GenerateError(RuntimeError):
    """protoc or one of its plugins failed, or a plugin is not installed."""


def proto_sources(root: Path = ROOT) -> list[Path]:
    """Every .proto under root/proto, sorted, as paths relative to root."""
    return sorted(p.relative_to(root) for p in (root / "proto").rglob("*.proto"))


def is_generated(path: Path) -> bool:
    """Whether a file name is one that protoc or its plugins produce."""
    return path.name.endswith(GENERATED_SUFFIXES)


def _plugin(name: str) -> Path:
    """A protoc plugin installed next to this interpreter (the venv's bin/)."""
    candidate = Path(sys.executable).parent / name
    if candidate.is_file():
        return candidate
    found = shutil.which(name)
    if found is None:
        raise GenerateError(f"{name} not found next to {sys.executable} or on PATH")
    return Path(found)


def _well_known_include() -> Path:
    """grpc_tools' bundled copy of google/protobuf/*.proto."""
    import grpc_tools

    return Path(grpc_tools.__file__).parent / "_proto"


def generate_into(out_dir: Path, root: Path = ROOT) -> list[Path]:
    """Run protoc on every .proto under root/proto, writing stubs into out_dir.

    Returns the generated files relative to out_dir, sorted.
    """
    from grpc_tools import protoc

    sources = proto_sources(root)
    if not sources:
        return []
    out = str(out_dir)
    args = [
        "grpc_tools.protoc",
        f"--proto_path={root}",
        f"--proto_path={_well_known_include()}",
        f"--plugin=protoc-gen-mypy={_plugin('protoc-gen-mypy')}",
        f"--plugin=protoc-gen-mypy_grpc={_plugin('protoc-gen-mypy_grpc')}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        f"--mypy_out=quiet:{out}",
        f"--mypy_grpc_out=quiet:{out}",
        *(str(root / source) for source in sources),
    ]
    status = protoc.main(args)
    if status != 0:
        raise GenerateError(f"protoc failed with status {status}")
    return sorted(p.relative_to(out_dir) for p in out_dir.rglob("*") if is_generated(p))


def _checked_in(root: Path) -> list[Path]:
    """Generated stubs currently in the tree, relative to root."""
    return sorted(p.relative_to(root) for p in (root / "proto").rglob("*") if is_generated(p))


def _package_inits(files: Sequence[Path]) -> list[Path]:
    """The __init__.py files that make every generated module importable."""
    inits: set[Path] = set()
    for file in files:
        for parent in file.parents:
            if parent == Path("."):
                break
            inits.add(parent / "__init__.py")
    return sorted(inits)


def compare(fresh_dir: Path, fresh: Sequence[Path], root: Path = ROOT) -> list[str]:
    """Differences between a fresh generation and the tree, one line each."""
    problems: list[str] = []
    fresh_set = set(fresh)
    for rel in fresh:
        target = root / rel
        if not target.is_file():
            problems.append(f"{rel.as_posix()}: missing (not checked in)")
        elif target.read_bytes() != (fresh_dir / rel).read_bytes():
            problems.append(f"{rel.as_posix()}: differs from a fresh generation")
    for rel in _checked_in(root):
        if rel not in fresh_set:
            problems.append(f"{rel.as_posix()}: stale (its .proto is gone)")
    for init in _package_inits(fresh):
        if not (root / init).is_file():
            problems.append(f"{init.as_posix()}: missing package __init__.py")
    return sorted(problems)


def check(root: Path = ROOT) -> list[str]:
    """Regenerate into a temporary directory; return every difference found."""
    with tempfile.TemporaryDirectory(prefix="skiff-proto-") as tmp:
        fresh_dir = Path(tmp)
        fresh = generate_into(fresh_dir, root)
        return compare(fresh_dir, fresh, root)


def generate(root: Path = ROOT) -> list[str]:
    """Regenerate the stubs in the tree; return what changed, one line each."""
    changes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="skiff-proto-") as tmp:
        fresh_dir = Path(tmp)
        fresh = generate_into(fresh_dir, root)
        fresh_set = set(fresh)
        for rel in fresh:
            data = (fresh_dir / rel).read_bytes()
            target = root / rel
            if target.is_file() and target.read_bytes() == data:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            changes.append(f"wrote {rel.as_posix()}")
        for rel in _checked_in(root):
            if rel not in fresh_set:
                (root / rel).unlink()
                changes.append(f"removed stale {rel.as_posix()}")
        for init in _package_inits(fresh):
            if not (root / init).exists():
                (root / init).touch()
                changes.append(f"created {init.as_posix()}")
    return changes


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point: generate, or with --check compare only."""
    parser = argparse.ArgumentParser(prog="python -m proto.generate", description=__doc__)
    parser.add_argument(
        "--check",
        action="store_true",
        help="only compare the checked-in stubs with a fresh generation; exit 1 on any difference",
    )
    args = parser.parse_args(argv)
    try:
        if args.check:
            problems = check()
            for line in problems:
                print(line)
            if problems:
                print("stubs are out of date: run `make proto`", file=sys.stderr)
                return 1
            return 0
        for line in generate():
            print(line)
    except GenerateError as err:
        print(f"proto.generate: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
