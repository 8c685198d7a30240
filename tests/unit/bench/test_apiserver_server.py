"""bench.apiserver.Server: a control plane that never gets ready is stopped
before Server() raises (its caller has no object to stop; a benchmark whose
server failed to start left `skiff controlplane` running)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from bench import apiserver
from tests.harness.wait import WaitTimeout


def test_a_server_never_ready_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[subprocess.Popen[bytes]] = []
    real_popen = subprocess.Popen

    def popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        proc = real_popen(*args, **kwargs)
        started.append(proc)
        return proc

    def never_ready(*args: Any, **kwargs: Any) -> None:
        raise WaitTimeout("timed out waiting for skiff controlplane")

    monkeypatch.setattr(subprocess, "Popen", popen)
    monkeypatch.setattr(apiserver, "wait_for", never_ready)
    (tmp_path / "cp").mkdir()
    try:
        with pytest.raises(WaitTimeout):
            apiserver.Server(tmp_path / "cp", ["--store", "sqlite"])
        assert len(started) == 1
        assert started[0].poll() is not None, "the control plane is still running"
    finally:
        for proc in started:  # on the old code: the leaked process, stopped here
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
