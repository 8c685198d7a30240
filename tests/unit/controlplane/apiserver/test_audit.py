"""The audit log (issue 16): who did what to which object, with what result
and how long it took, as JSON lines, by policy, rotated by size; off unless
asked for. On the old code nothing recorded who did anything."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from controlplane.apiserver.audit import AuditLog, Policy, Rule, load_policy, rotated
from controlplane.apiserver.auth import Identity


def lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_rotation_by_size(tmp_path: Path) -> None:
    log = AuditLog(
        tmp_path / "a.log", max_bytes=2000, backups=2, policy=Policy((Rule("Metadata"),))
    )
    who = Identity("u", groups=("g",))
    for i in range(60):
        log.record(who, "get", {"resource": "pods", "name": f"p{i}"}, 200,
                   datetime.datetime.now(datetime.UTC), 1.0)  # fmt: skip
    files = rotated(tmp_path / "a.log")
    assert [f.name for f in files] == ["a.log", "a.log.1", "a.log.2"]
    assert all(f.stat().st_size <= 2000 for f in files)
    assert lines(files[0])[-1]["objectRef"]["name"] == "p59"


def test_a_bad_policy_names_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text("kind: Policy\nrules:\n- level: Everything\n")
    with pytest.raises(ValueError, match=r"rules\[0\].level"):
        load_policy(bad)
