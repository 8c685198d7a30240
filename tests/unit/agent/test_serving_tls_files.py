"""The agent's serving key is written as every credential is (issue 27):
0600 from creation whatever the umask, never through a stale or planted
`serving.key.tmp` (the old inline writer opened that name with O_TRUNC and
followed a symlink there)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from agent import serving_tls


def test_the_key_never_goes_through_a_planted_temporary(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    root = tmp_path / "agent"
    root.mkdir()
    os.symlink(elsewhere, root / "serving.key.tmp")
    old = os.umask(0)
    try:
        serving_tls.save(root, b"CERT", b"KEY")
    finally:
        os.umask(old)
    assert not elsewhere.exists()
    assert (root / "serving.key").read_bytes() == b"KEY"
    assert stat.S_IMODE((root / "serving.key").stat().st_mode) == 0o600
    assert (root / "serving.crt").read_bytes() == b"CERT"
    assert stat.S_IMODE((root / "serving.crt").stat().st_mode) == 0o644
    assert serving_tls.have(root)
