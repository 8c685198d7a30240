"""The runtime's one atomic file write: a temporary file beside the target
(`<name>.tmp`), then `os.replace`, so a reader or a runtime restarted after
`kill -9` sees the old file or the new one, never a torn one.

`durable=True` also survives a power loss: the file is fsync'd before the
rename and its directory after it (without the second fsync the rename
itself may be lost). Use it for what the node must find again after a
crash: checkpoints, the image index, the CNI result cache and config.
What is made again anyway (a spawn's spec, a pull's lease, the pause
binary, a pod's hosts file) skips the two fsyncs.

Standard library only (the container monitor uses it too). The CNI plugin,
which must start without importing `os`, has its own copy on `posix` in
`runtime.cni.oslib`; the agent has `agent.atomicfile`.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(
    path: str | os.PathLike[str], data: bytes | str, *, durable: bool, mode: int = 0o644
) -> None:
    """Replace `path` with `data` (str is written as UTF-8), mode `mode`."""
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    raw = data.encode() if isinstance(data, str) else data
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, mode)
    try:
        os.fchmod(fd, mode)
        view = memoryview(raw)
        while view:
            view = view[os.write(fd, view) :]
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)
    if durable:
        sync_dir(target.parent)


def sync_dir(path: str | os.PathLike[str]) -> None:
    """fsync a directory, so the names created or renamed in it persist."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
