"""The agent's one atomic file write (the agent may not import the runtime's):
`<name>.tmp` beside the target, then `os.replace`, so a reader sees the old
file or the new one, never a torn one. `durable=True` (the CNI config, the
host-state record `skiff down` reads) also fsyncs the file before the rename
and the directory after it, so a power loss cannot lose or tear it.
Credential files have their own writer (mode 0600 from creation).
"""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, text: str, *, durable: bool) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if durable:
        fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
