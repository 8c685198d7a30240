"""Credential files are 0600 from creation (O_EXCL on a fresh name in the
same directory), never through a stale or planted temporary, whatever the
umask (issue 17); pki keys go through the same writer."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane.apiserver.tls import ensure_pki
from controlplane.client.privatefile import copy_private, write_private


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0)
    yield
    os.umask(old)


def test_written_0600_atomically_with_no_temporary_left(tmp_path: Path, open_umask: object) -> None:
    path = tmp_path / "node.conf"
    path.write_text("old")
    os.chmod(path, 0o644)
    write_private(path, "token: new\n")
    assert path.read_text() == "token: new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["node.conf"]
    copy_private(path, tmp_path / "admin.conf")
    assert stat.S_IMODE((tmp_path / "admin.conf").stat().st_mode) == 0o600


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "join-token"
    path.write_text("old\n")
    with pytest.raises(TypeError):
        write_private(path, 5)  # type: ignore[arg-type]
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["join-token"]


def test_pki_keys_never_reuse_a_stale_world_readable_temporary(
    tmp_path: Path, open_umask: object
) -> None:
    """The old writer opened `<key>.tmp` with O_TRUNC: a leftover 0644 file
    (or a symlink planted there) kept its mode and the key became readable
    by every local user."""
    pki = tmp_path / "pki"
    pki.mkdir()
    for name in ("ca.key", "server.key", "sa.key", "token-secret"):
        (pki / f"{name}.tmp").write_text("")
        os.chmod(pki / f"{name}.tmp", 0o644)
    elsewhere = tmp_path / "elsewhere"
    os.symlink(elsewhere, pki / "ca.crt.tmp")
    ensure_pki(tmp_path)
    for name in ("ca.key", "server.key", "sa.key", "token-secret"):
        assert stat.S_IMODE((pki / name).stat().st_mode) == 0o600, name
        assert (pki / f"{name}.tmp").read_text() == ""  # untouched, not written through
    assert stat.S_IMODE((pki / "ca.crt").stat().st_mode) == 0o644
    assert not elsewhere.exists()
