"""subPath volume mounts without container escapes (the CVE-2017-1002101
class), as the kubelet's subpath package does them.

A container can put symlinks in a volume (`ln -s / /vol/x`), so the host
path of `subPath: x` must never be followed blindly. `prepare` resolves the
subPath inside the volume, refuses one that leads out of it, then opens the
resolved path from the volume root one component at a time with O_NOFOLLOW
(making missing directories with mkdirat on the way), so a symlink swapped
in meanwhile fails the walk instead of redirecting it. The opened directory
or file is bind-mounted through /proc/self/fd/N onto a directory of the
agent's own (`<pod dir>/volume-subpaths/<volume>/<container>/<index>`),
which is what the runtime gets as the mount's host path: nothing a container
can change lies on that path. Removing the pod's dir unmounts these binds
(volumes.teardown_volumes).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from agent.pod_config import ConfigError
from machinery import libc


def _mount_bind(source: str, target: str) -> None:
    try:
        libc.mount(source, target, None, libc.MS_BIND)
    except OSError as err:
        raise OSError(
            err.errno, f"bind {source} on {target}: {os.strerror(err.errno or 0)}"
        ) from None


def _unmount(target: str) -> None:
    try:
        libc.umount2(target, libc.MNT_DETACH)
    except OSError as err:
        if err.errno not in (errno.EINVAL, errno.ENOENT):
            raise OSError(err.errno, f"unmount {target}: {os.strerror(err.errno or 0)}") from None


def resolve(volume: str, sub: str) -> tuple[str, str]:
    """(the volume's real path, the subPath relative to it) with every
    symlink resolved; ConfigError if it leads outside the volume."""
    if sub.startswith("/") or ".." in Path(sub).parts:
        raise ConfigError(f"subPath {sub!r} must be relative without '..'")
    base = os.path.realpath(volume)
    real = os.path.realpath(os.path.join(base, sub))
    if real != base and not real.startswith(base + "/"):
        raise ConfigError(f"subPath {sub!r} leads outside its volume (through a symlink)")
    return base, os.path.relpath(real, base)


def open_beneath(base: str, rel: str) -> int:
    """An fd of `base`/`rel` opened component by component with O_NOFOLLOW,
    missing directories made on the way; ConfigError on any symlink."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    parts = [p for p in rel.split("/") if p and p != "."]
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            flags = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                nxt = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                os.mkdir(part, 0o755, dir_fd=fd)
                nxt = os.open(part, flags, dir_fd=fd)
            mode = os.fstat(nxt).st_mode
            if stat.S_ISLNK(mode) or (not last and not stat.S_ISDIR(mode)):
                os.close(nxt)
                raise ConfigError(f"subPath {rel!r}: {part!r} changed while it was opened")
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def prepare(volume: str, sub: str, target: Path) -> str:
    """Bind the subPath of `volume` onto `target` (made here) and return it."""
    base, rel = resolve(volume, sub)
    fd = open_beneath(base, rel)
    try:
        is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
        target.parent.mkdir(mode=0o750, parents=True, exist_ok=True)
        _unmount(str(target))  # a container restarted: bind afresh
        if is_dir:
            target.mkdir(mode=0o750, exist_ok=True)
        elif not target.exists():
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o640))
        _mount_bind(f"/proc/self/fd/{fd}", str(target))
    finally:
        os.close(fd)
    return str(target)


def checked_path(volume: str, sub: str) -> str:
    """Without a bind (no subpath dir given): the checked host path, its
    missing directories made safely."""
    base, rel = resolve(volume, sub)
    os.close(open_beneath(base, rel))
    return os.path.join(base, rel) if rel != "." else base
