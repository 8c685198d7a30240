"""The systemd units of vagrant/ as command lines: the unit tests check them
against skiff's own argument parsers, and the e2e cluster harness starts its
daemons with exactly these command lines."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path

VAGRANT_DIR = Path(__file__).resolve().parents[2] / "vagrant"
UNITS = VAGRANT_DIR / "systemd"


def unit_argv(unit: Path, env: Mapping[str, str], key: str = "ExecStart") -> list[str]:
    """The argv of a unit's ExecStart (or another Exec* key), with `${VAR}`
    expanded from `env` as systemd expands it from the EnvironmentFile."""
    for line in unit.read_text().splitlines():
        if line.startswith(f"{key}="):
            text = re.sub(r"\$\{(\w+)\}", lambda m: env[m.group(1)], line.split("=", 1)[1])
            return shlex.split(text)
    raise KeyError(f"{unit.name} has no {key}")
