"""One real control plane (SQLite, scheduler and controllers) per test module,
served in this process (its components as threads) on a free port, driven
over HTTPS by kubectl itself and by the official `kubernetes` Python client
through the kubeconfig it writes."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from controlplane import main as cp_main
from tests.harness.kubectl import GO_ENV, NEWEST
from tests.harness.ports import free_port

# The newest kubectl by its versioned path; the PATH one only where none is.
KUBECTL = str(NEWEST) if NEWEST.exists() else shutil.which("kubectl")


@dataclass
class Cluster:
    running: cp_main.RunningControlPlane
    kubeconfig: Path
    port: int
    home: Path  # kubectl's HOME: its discovery cache lands here, not in the tree

    def env(self, **extra: str) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home),
                "KUBECONFIG": str(self.kubeconfig), **GO_ENV, **extra}  # fmt: skip

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:  # fmt: skip
        assert KUBECTL is not None
        done = subprocess.run(
            [KUBECTL, *args], input=input, capture_output=True, text=True, timeout=timeout,
            env=self.env(**(env or {})),
        )  # fmt: skip
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {done.returncode}\n{done.stderr}")
        return done


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("rest")
    data_dir = base / "cp"
    port = free_port()
    # The scheduler and controllers as threads of this process (the default
    # on one CPU), not processes: each process would import the control
    # plane again, a second or more of CPU apiece per module.
    args = cp_main.build_parser().parse_args(
        ["--listen", f"127.0.0.1:{port}", "--data-dir", str(data_dir),
         "--bookmark-interval", "0.5", "--no-component-processes"]
    )  # fmt: skip
    running = cp_main.start(args)
    try:
        yield Cluster(running, data_dir / "kubeconfig", port, base)
    finally:
        running.stop()


@pytest.fixture(scope="module")
def need_kubectl() -> None:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
