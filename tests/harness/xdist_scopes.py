"""How `make test` hands tests to its workers (pytest-xdist).

By module (`--dist loadscope`): a module's tests run on one worker, in order,
so its module fixtures start once and a test may build on the one before.
A slow module whose tests are independent of each other is listed in SPREAD:
its tests go to whichever worker is free, each worker setting up the
module's fixtures for itself. (The controller of the run sees test ids, not
markers, so the list names files.)
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

SPREAD = frozenset(
    {
        # A fresh node (runtime + agent processes) per test, 17 tests.
        "tests/e2e/agent/test_pods.py",
    }
)


class ModuleScheduling(LoadScopeScheduling):  # type: ignore[misc]  # xdist is untyped
    def _split_scope(self, nodeid: str) -> str:
        if nodeid.split("::", 1)[0] in SPREAD:
            return nodeid
        return str(super()._split_scope(nodeid))
