"""`skiff controlplane` as a real process on 127.0.0.1 with a temporary data dir.

Started with the repository's interpreter, waited for with `wait_for` on a real
request, stopped by its pid (SIGTERM, or SIGKILL for crash tests).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.config import load_config
from tests.harness.ports import free_port
from tests.harness.wait import wait_for

REPO = Path(__file__).resolve().parents[2]


@dataclass
class ControlPlane:
    data_dir: Path
    extra_args: list[str] = field(default_factory=list)
    # The schedulers and controllers run in `skiff controlplane` by default;
    # most tests drive the API alone or run their own controllers in-process,
    # and each component is a process of its own that costs a second of CPU
    # to start, so they run only with components=True.
    components: bool = False
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    clients: list[GrpcApiClient] = field(default_factory=list)

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / f"{self.data_dir.name}.log"

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "skiff", "controlplane",
            "--listen", f"127.0.0.1:{self.port}",
            "--data-dir", str(self.data_dir),
            "--bookmark-interval", "0.5",
            *([] if self.components else ["--disable", "scheduler", "--disable", "volcano-scheduler",
                                          "--disable", "controllers"]),
            # No component's secure port on the host's standard ports (tests
            # run side by side); a test that wants them names free ones after.
            "--scheduler-secure-port=0", "--volcano-scheduler-secure-port=0",
            "--controller-manager-secure-port=0",
            *self.extra_args,
        ]  # fmt: skip

    def start(self, wait: bool = True) -> ControlPlane:
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(self.command(), cwd=REPO, stdout=log, stderr=log)
        log.close()
        if wait:
            try:
                # A quiet machine starts it in 2-4 s; 60 s covers a machine
                # at load 40, where Python's imports alone took over 30.
                wait_for(self._ready, timeout=60, message=f"skiff controlplane on port {self.port}")
            except BaseException:
                self.close()  # a caller whose start() raised has nothing to close
                raise
        return self

    def _ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"control plane exited: {self.log_path.read_text()[-2000:]}")
        if not (self.data_dir / "admin.conf").exists():
            return False
        with connect(load_config(self.data_dir / "admin.conf"), timeout=2) as c:
            c.whoami()
        return True

    def client(self, credentials: str = "admin.conf") -> GrpcApiClient:
        """A client with the credential file `credentials` of the data directory
        (a component's kubeconfig, such as controller-manager.conf, or the admin's)."""
        c = connect(load_config(self.data_dir / credentials), timeout=10)
        self.clients.append(c)
        return c

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
        try:
            code = self.proc.wait(20)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            code = self.proc.wait()
        self.proc = None
        return code

    def close(self) -> None:
        for c in self.clients:
            c.close()
        self.stop()
