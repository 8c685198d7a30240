"""The one durable writer for credential files (admin.conf, kubeconfig,
node.conf, join-token, pki keys, agent credentials).

`write_private` creates a fresh temporary name in the target's directory
with O_CREAT|O_EXCL|O_NOFOLLOW and mode 0600 (so a stale or planted file,
or a symlink at that name, is never reused and the bytes are never readable
by others, not even briefly, whatever the umask), writes and fsyncs it,
renames it over the target and fsyncs the directory so the rename survives
a crash. Never chmod-after-write. Public files (a certificate) may pass a
wider `mode`; it is still set at creation.

The agent imports this through the client library; the runtime writes no
credentials.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

PRIVATE = 0o600


def write_private(path: Path, data: bytes | str, mode: int = PRIVATE) -> None:
    """Replace `path` with `data` durably; the file is `mode` from creation."""
    body = data.encode() if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, mode)
    try:
        try:
            os.fchmod(fd, mode)  # the umask may have narrowed it; never widens past `mode`
            view = memoryview(body)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def copy_private(src: Path, dst: Path) -> None:
    """Copy a credential file through `write_private` (0600)."""
    write_private(dst, src.read_bytes())
