"""How `make test` hands tests to its workers (pytest-xdist).

By module (`--dist loadscope`): a module's tests run on one worker, in order,
so its module fixtures start once and a test may build on the one before.
A slow module whose tests are independent of each other is listed in SPREAD:
its tests go to whichever worker is free, each worker setting up the
module's fixtures for itself. A slow module whose tests build on each other
only within one parameter (the kubectl matrix: one namespace per kubectl
version) is listed in BY_PARAM: each parameter's tests are one unit, run in
order on one worker. (The controller of the run sees test ids, not
markers, so the list names files.)

Longest first: a worker that asks for work gets the unit that takes longest
of those left (xdist's own order is by number of tests, so a one-test module
of a minute could start last and keep one worker busy after the others
stopped). How long a module takes is read from `module_times.json` (seconds
per module, measured: `python -m tests.harness.module_times`); a module it
does not list is guessed from its number of tests and its layer.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from xdist.scheduler import LoadScopeScheduling

SPREAD: frozenset[str] = frozenset(
    # None now: tests/e2e/agent/test_pods.py was here while it started a fresh
    # node per test; it shares one node per runtime kind now (nodepool.py),
    # which spreading would start again on every worker.
)

# One unit per parameter id (`test_x[1.27]`): 7 kubectl versions, 6 minutes
# in one unit before.
BY_PARAM = frozenset({"tests/integration/rest/test_kubectl_matrix.py"})

TIMES_FILE = Path(__file__).with_name("module_times.json")

# Seconds a test of the layer takes, for a module that TIMES_FILE does not
# list (the means of a measured `make test`, rounded).
PER_TEST = {"e2e": 10.0, "linux": 1.0, "integration": 1.5, "fuzz": 1.5, "unit": 0.05}
PER_TEST_ELSEWHERE = 1.0


def module_of(scope: str) -> str:
    """The file of a scope or test id: `tests/x/test_y.py`."""
    return scope.split("::", 1)[0].split("[", 1)[0]


def load_times(path: Path = TIMES_FILE) -> dict[str, float]:
    """The measured seconds per module; none if the file is missing."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    return {str(k): float(v) for k, v in data.items()}


def param_scope(nodeid: str) -> str:
    """`tests/a.py::test_x[1.27]` -> `tests/a.py[1.27]`; the module for a
    test without a parameter."""
    module = module_of(nodeid)
    name = nodeid.rsplit("::", 1)[-1]
    if name.endswith("]") and "[" in name:
        return f"{module}[{name[name.index('[') + 1 : -1]}]"
    return module


def guess(module: str, tests: int) -> float:
    parts = module.split("/")
    layer = parts[1] if len(parts) > 2 and parts[0] == "tests" else ""
    return tests * PER_TEST.get(layer, PER_TEST_ELSEWHERE)


def longest_first(
    workqueue: Mapping[str, Mapping[str, bool]], times: Mapping[str, float]
) -> list[str]:
    """The scopes of `workqueue` (scope -> its test ids), the longest first;
    a spread module's time is shared evenly by its scopes. Equal times keep
    xdist's order."""
    scopes_of = Counter(module_of(scope) for scope in workqueue)

    def seconds(scope: str) -> float:
        module = module_of(scope)
        if module in times:
            return times[module] / scopes_of[module]
        return guess(module, len(workqueue[scope]))

    return sorted(workqueue, key=seconds, reverse=True)


class ModuleScheduling(LoadScopeScheduling):  # type: ignore[misc]  # xdist is untyped
    times_file = TIMES_FILE

    def __init__(self, config: Any, log: Any = None) -> None:
        super().__init__(config, log)
        self._times = load_times(self.times_file)
        self._ordered = False

    def _split_scope(self, nodeid: str) -> str:
        if module_of(nodeid) in SPREAD:
            return nodeid
        if module_of(nodeid) in BY_PARAM:
            return param_scope(nodeid)
        return str(super()._split_scope(nodeid))

    def _assign_work_unit(self, node: Any) -> None:
        if not self._ordered:
            # The first assignment: the queue is whole now (xdist fills it at
            # once before handing out the first unit).
            for scope in longest_first(self.workqueue, self._times):
                self.workqueue.move_to_end(scope)
            self._ordered = True
        super()._assign_work_unit(node)
