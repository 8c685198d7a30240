"""The runtime's atomic write: replaces whole, with the mode asked for, and
leaves no temporary file behind, durable or not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.cni import oslib
from runtime.store.atomicfile import write_atomic


@pytest.mark.parametrize("durable", [True, False])
def test_replaces_the_file_whole(tmp_path: Path, durable: bool) -> None:
    target = tmp_path / "index.json"
    target.write_text("old contents, longer than the new")
    write_atomic(target, "new", durable=durable, mode=0o600)
    assert target.read_text() == "new"
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.json"]


def test_bytes_and_a_planted_symlink_at_the_temporary_name(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("untouched")
    (tmp_path / "f.tmp").symlink_to(elsewhere)
    with pytest.raises(OSError):
        write_atomic(tmp_path / "f", b"\x00data", durable=True)
    assert elsewhere.read_text() == "untouched"


def test_the_cni_plugins_copy(tmp_path: Path) -> None:
    target = str(tmp_path / "last_reserved_ip.0")
    oslib.write_atomic(target, b"10.0.0.2")
    oslib.write_atomic(target, b"10.0.0.3")
    assert Path(target).read_bytes() == b"10.0.0.3"
    assert os.listdir(tmp_path) == ["last_reserved_ip.0"]
