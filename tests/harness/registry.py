"""A local OCI registry for tests: Debian's `docker-registry` on 127.0.0.1.

`run_registry()` writes a throwaway config (filesystem storage in a temp
dir, deletes enabled, log level warn, no auth, no proxying, no
notifications), starts `docker-registry serve CONFIG` on a free loopback
port, waits until `GET /v2/` answers 200, and on exit stops the process it
started by its pid (SIGTERM, wait, SIGKILL) and removes its directory, also
when the body raised. It never binds anything but 127.0.0.1 and never
touches a registry it did not start.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import yaml

from tests.harness.images.distribution import ImageRef, RegistryClient
from tests.harness.images.manifest import Image, Index
from tests.harness.ports import free_port
from tests.harness.wait import wait_for

REGISTRY_BINARY = Path("/usr/bin/docker-registry")
_PR_SET_PDEATHSIG = 1


class ProcessHandle(Protocol):
    """What tests ask of the registry's process: a Popen, or `PidHandle` in
    a worker of a parallel run, whose registry the controller started."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...


@dataclass(frozen=True)
class PidHandle:
    pid: int

    def poll(self) -> int | None:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return -1
        return None


@dataclass
class Registry:
    """A running registry. `host` is "127.0.0.1:PORT", `url` "http://host"."""

    host: str
    root: Path  # config.yml, storage/, registry.log
    process: ProcessHandle

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    @property
    def port(self) -> int:
        return int(self.host.rsplit(":", 1)[1])

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def storage(self) -> Path:
        return self.root / "storage"

    def client(self, timeout: float = 60.0) -> RegistryClient:
        return RegistryClient(self.host, timeout)

    def unique_repository(self, prefix: str = "test") -> str:
        """A repository name no other test uses: `skiff-test/<prefix>-<hex>`."""
        clean = "".join(c if c.isalnum() else "-" for c in prefix.lower()).strip("-")
        return f"skiff-test/{clean[:40] or 'test'}-{secrets.token_hex(4)}"

    def push(
        self, item: Image | Index, repository: str | None = None, tag: str | None = None
    ) -> ImageRef:
        """Push `item` to `repository` (a fresh unique one by default) as `tag`
        (default `item.tag`)."""
        return self.client().push(repository or self.unique_repository(item.name), item, tag)

    def log(self) -> str:
        try:
            return (self.root / "registry.log").read_text(errors="replace")
        except FileNotFoundError:
            return ""


def registry_config(storage: Path, port: int) -> dict[str, object]:
    return {
        "version": 0.1,
        "log": {"level": "warn", "accesslog": {"disabled": True}},
        "storage": {
            "filesystem": {"rootdirectory": str(storage)},
            "delete": {"enabled": True},
            "maintenance": {"uploadpurging": {"enabled": False}},
        },
        "http": {"addr": f"127.0.0.1:{port}", "secret": secrets.token_hex(16)},
    }


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM it if the test process dies (a
    registry must not outlive a killed pytest)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """Stop a process we started, by its pid: SIGTERM, wait, then SIGKILL."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)


def _start(root: Path, binary: Path) -> tuple[str, subprocess.Popen[bytes]]:
    port = free_port()
    config = root / "config.yml"
    config.write_text(yaml.safe_dump(registry_config(root / "storage", port)))
    with open(root / "registry.log", "ab") as log:
        proc = subprocess.Popen(
            [str(binary), "serve", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=root,
            preexec_fn=_die_with_parent,  # runs before exec; no locks taken
        )
    return f"127.0.0.1:{port}", proc


@contextmanager
def run_registry(
    binary: Path = REGISTRY_BINARY, timeout: float = 30.0, attempts: int = 3
) -> Iterator[Registry]:
    """Start a registry, yield it, stop it and remove its files. The port is
    picked free just before start; if another process takes it first the
    registry exits and is started again on a new port (`attempts` times)."""
    if not binary.exists():
        raise FileNotFoundError(f"{binary} missing (apt-get install docker-registry)")
    root = Path(tempfile.mkdtemp(prefix="skiff-registry-"))
    proc: subprocess.Popen[bytes] | None = None
    try:
        (root / "storage").mkdir()
        for attempt in range(attempts):
            host, proc = _start(root, binary)
            registry = Registry(host, root, proc)
            client = registry.client(timeout=2.0)

            def up(p: subprocess.Popen[bytes] = proc, c: RegistryClient = client) -> bool:
                return p.poll() is not None or c.ping()

            wait_for(up, timeout=timeout, message=f"registry on {host} to answer GET /v2/")
            if proc.poll() is None:
                break
            if attempt == attempts - 1:
                raise RuntimeError(f"docker-registry exited {proc.returncode}:\n{registry.log()}")
        yield registry
    finally:
        if proc is not None:
            stop_process(proc)
        shutil.rmtree(root, ignore_errors=True)
