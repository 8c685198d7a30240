"""Unpacked layers are private (issue 17, the CVE-2021-41091 class): a
setuid file shipped in an image must not be reachable by host users."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from runtime.image.layers import LayerStore
from runtime.image.unpack import LayerStats


def test_layers_live_under_a_private_directory(tmp_path: Path) -> None:
    store = LayerStore(tmp_path)
    tmp = store.new_tmp()
    suid = tmp / "fs" / "suid"
    suid.write_bytes(b"#!/bin/sh\n")
    os.chmod(suid, 0o4755)
    store.commit(tmp, "sha256:" + "a" * 64, "sha256:" + "b" * 64, LayerStats())
    assert stat.S_IMODE(os.stat(store.dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(store.path("sha256:" + "a" * 64)).st_mode) & 0o077 == 0
