"""Atomic JSON checkpoints: write a temporary file, then `os.replace`.

A reader, or a runtime restarted after `kill -9`, sees the old or the new
file, never a torn one. There is no fsync: it cost more than any other step
of CreateContainer, and after a power loss every container is gone anyway,
so a lost last checkpoint only forgets an object that no longer runs.
Nothing here knows what a sandbox or container is.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def save(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(obj, f, sort_keys=True)
    os.replace(tmp, path)


def load(path: Path) -> Any:
    with open(path) as f:
        return json.load(f)
