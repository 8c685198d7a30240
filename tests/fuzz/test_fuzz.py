"""A short seeded run of every fuzz target (issue 17): each input gets a
clear error or a correct result; no crash, hang or leaked fd, thread or
mount. bench/fuzz.py runs the long campaign."""

from __future__ import annotations

import pytest

from tests.fuzz.runner import run
from tests.fuzz.targets import TARGETS, Target

SHORT = {"tar_layer": 40, "registry_response": 60, "api_object": 60}


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_fuzz_target_short_run(target: Target) -> None:
    stats = run(target, SHORT.get(target.name, 150), rng_seed=17)
    assert stats.crashes == 0, stats.first_crash
    assert (stats.hangs, stats.leaked_fds, stats.leaked_threads, stats.leaked_mounts,
            stats.over_memory) == (0, 0, 0, 0, 0), stats.row()  # fmt: skip
    assert stats.inputs > 0
