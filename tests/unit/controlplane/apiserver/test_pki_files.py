"""pki keys go through the credential writer (machinery.atomicfile): 0600
from creation, never through a stale or planted temporary (issue 17)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane.apiserver.tls import ensure_pki


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0)
    yield
    os.umask(old)


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
