"""What `skiff up`'s processes import at start costs memory at rest (issue 27
item 8): modules used only by work that comes later (an HTTP probe or hook)
are imported when that work comes, not when the module that does it is."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# (what a process imports at start, modules it must not load with it)
CASES = [
    ("agent.up", ["urllib.request"]),
]


@pytest.mark.parametrize(("start", "absent"), CASES)
def test_start_modules_leave_later_work_unloaded(start: str, absent: list[str]) -> None:
    code = (
        f"import sys, json, {start}\nprint(json.dumps([m for m in {absent!r} if m in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
