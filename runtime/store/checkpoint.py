"""Atomic, durable JSON checkpoints (`atomicfile.write_atomic`): a reader,
or a runtime restarted after `kill -9` or a power loss, sees the old or the
new file, never a torn one. Nothing here knows what a sandbox or container is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from machinery.atomicfile import write_atomic


def save(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(obj, sort_keys=True), durable=True)


def load(path: Path) -> Any:
    with open(path) as f:
        return json.load(f)
