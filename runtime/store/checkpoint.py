"""Atomic JSON checkpoints: write a temporary file, fsync, `os.replace`.

A reader sees the old or the new file, never a torn one. Nothing here knows
what a sandbox or container is.
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
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load(path: Path) -> Any:
    with open(path) as f:
        return json.load(f)
