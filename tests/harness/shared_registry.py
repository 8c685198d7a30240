"""One registry for every worker of a parallel run.

Under pytest-xdist each worker is a process of its own, and a session
fixture would start one registry per worker. Instead the controller, which
lives for the whole run, starts one when it configures its first worker
(`run_registry`: the registry dies with the controller, however it ends) and
hands its address to every worker (`workerinput`); the workers' `registry`
fixture wraps that address. Repositories are unique per test
(`Registry.unique_repository`), so sharing is safe. A run of only the unit
and fuzz layers starts none. Test images are built per worker: from
Debian's busybox in Python, about 2 s, less than coordinating them would cost.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.harness.registry import REGISTRY_BINARY, PidHandle, Registry, run_registry

KEY = "skiff_registry"
_NO_REGISTRY_LAYERS = ("tests/unit", "tests/fuzz")


class SharedRegistry:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.stack = ExitStack()
        self.registry: Registry | None = None

    def _wanted(self) -> bool:
        args = [str(a) for a in self.config.args] or ["tests"]
        return REGISTRY_BINARY.exists() and not all(a.startswith(_NO_REGISTRY_LAYERS) for a in args)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:  # xdist's, in the controller
        if self.registry is None and self._wanted():
            self.registry = self.stack.enter_context(run_registry())
        if self.registry is not None:
            node.workerinput[KEY] = {
                "host": self.registry.host,
                "root": str(self.registry.root),
                "pid": self.registry.pid,
            }

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.stack.close()


def register(config: pytest.Config) -> None:
    """In the controller of a parallel run (only there is the xdist hook called)."""
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(SharedRegistry(config), "skiff-shared-registry")


def from_controller(config: pytest.Config) -> Registry | None:
    """In a worker: the controller's registry, if it started one."""
    given = getattr(config, "workerinput", {}).get(KEY)
    if not given:
        return None
    return Registry(given["host"], Path(given["root"]), PidHandle(int(given["pid"])))
