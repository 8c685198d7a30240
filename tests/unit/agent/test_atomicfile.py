"""The agent's atomic write replaces whole and leaves no temporary file."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.atomicfile import write_atomic


@pytest.mark.parametrize("durable", [True, False])
def test_replaces_the_file_whole(tmp_path: Path, durable: bool) -> None:
    target = tmp_path / "10-skiff.conflist"
    target.write_text("old contents, longer than the new")
    write_atomic(target, "{}\n", durable=durable)
    assert target.read_text() == "{}\n"
    assert [p.name for p in tmp_path.iterdir()] == ["10-skiff.conflist"]
