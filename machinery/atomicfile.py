"""Atomic and private file writes: the one home of os.replace and os.rename.

A reader (or a process restarted after `kill -9`) sees the old file or the
new one, never a torn one: everything is written beside its target and
renamed over it.

- `write_atomic(path, data, durable=...)`: `<name>.tmp` beside the target
  (O_NOFOLLOW, so a symlink planted at that name is refused), the mode set
  at creation, then the rename. `durable=True` also survives a power loss:
  the file is fsync'd before the rename and its directory after it (without
  the second fsync the rename itself may be lost). Use it for what must be
  found again after a crash (checkpoints, the image index, CNI results and
  config, IPAM reservations, the host-state record); what is made again
  anyway (a spawn's spec, a pull's lease, a pod's hosts file) skips the
  two fsyncs.
- `write_private(path, data)`: for credentials (kubeconfigs, tokens, keys).
  A fresh, unguessable temporary name made with O_CREAT|O_EXCL|O_NOFOLLOW and
  mode 0600 from creation (a stale or planted file is never reused and the
  bytes are never readable by others, not even briefly, whatever the
  umask), fsync, rename, directory fsync. Never chmod-after-write.
- `publish`, `move_aside`, `swap_symlink`: the renames that put a prepared
  file, directory or symlink in place, or take one out of the way before it
  is removed, so a half-made or half-removed thing never looks complete.

Built on `posix` alone (importing `os` costs the CNI plugin ~2 ms, a tenth
of an ADD), so every process may use it: the CNI plugin, the container
monitor, the agent and the control plane. Nothing here decides which files
are private or durable; the callers do.
"""

from __future__ import annotations

import _thread
import posix

TYPE_CHECKING = False
if TYPE_CHECKING:
    from os import PathLike

    StrPath = str | PathLike[str]

PRIVATE = 0o600

_O_TMP = posix.O_WRONLY | posix.O_CREAT | posix.O_NOFOLLOW | posix.O_CLOEXEC
_O_DIR = posix.O_RDONLY | posix.O_DIRECTORY | posix.O_CLOEXEC


def _parent(path: str) -> str:
    head, _, _ = path.rstrip("/").rpartition("/")
    return head or ("/" if path.startswith("/") else ".")


def _write_new(path: str, flags: int, data: bytes, mode: int, fsync: bool) -> None:
    """Open `path` (with `flags` on top of O_CREAT|O_NOFOLLOW), mode `mode`
    whatever the umask, write all of `data`, fsync if asked, close. A write
    that fails removes the file it opened (never one it could not open)."""
    fd = posix.open(path, _O_TMP | flags, mode)
    try:
        posix.fchmod(fd, mode)  # the umask may have narrowed it; never widens past `mode`
        view = memoryview(data)
        while view:
            view = view[posix.write(fd, view) :]
        if fsync:
            posix.fsync(fd)
    except BaseException:
        posix.close(fd)
        _unlink(path)
        raise
    posix.close(fd)


def _unlink(path: str) -> None:
    try:
        posix.unlink(path)
    except FileNotFoundError:
        pass


def sync_dir(path: StrPath) -> None:
    """fsync a directory, so the names created or renamed in it persist."""
    fd = posix.open(posix.fspath(path), _O_DIR)
    try:
        posix.fsync(fd)
    finally:
        posix.close(fd)


# `_thread`, not `threading`: this module is on the CNI plugin's hot path,
# which must not import `os` (threading does; runtime/cni/__init__).
_LOCKS: dict[str, _thread.LockType] = {}
_LOCKS_GUARD = _thread.allocate_lock()


def _lock_of(target: str) -> _thread.LockType:
    with _LOCKS_GUARD:
        lock = _LOCKS.get(target)
        if lock is None:
            lock = _LOCKS[target] = _thread.allocate_lock()
        return lock


def write_atomic(path: StrPath, data: bytes | str, *, durable: bool, mode: int = 0o644) -> None:
    """Replace `path` with `data` (str is written as UTF-8), mode `mode`."""
    target = posix.fspath(path)
    raw = data.encode() if isinstance(data, str) else data
    tmp = target + ".tmp"
    # Two threads writing one file would share `<name>.tmp`: the second's
    # rename then finds it gone (an agent writing its CNI config from two
    # events at once exited so). One writer per path at a time.
    with _lock_of(target):
        _write_new(tmp, posix.O_TRUNC, raw, mode, durable)
        posix.replace(tmp, target)
    if durable:
        sync_dir(_parent(target))


def write_private(path: StrPath, data: bytes | str, mode: int = PRIVATE) -> None:
    """Replace `path` with `data` durably; the file is `mode` from creation.
    Missing parent directories are made 0700. A public file (a certificate)
    may pass a wider `mode`; it is still set at creation."""
    target = posix.fspath(path)
    body = data.encode() if isinstance(data, str) else data
    parent = _parent(target)
    _makedirs(parent, 0o700)
    name = target.rpartition("/")[2]
    tmp = f"{parent}/.{name}.{posix.urandom(6).hex()}.tmp"
    _write_new(tmp, posix.O_EXCL, body, mode, True)
    try:
        posix.replace(tmp, target)
    except BaseException:
        _unlink(tmp)
        raise
    sync_dir(parent)


def copy_private(src: StrPath, dst: StrPath) -> None:
    """Copy a credential file through `write_private` (0600)."""
    with open(posix.fspath(src), "rb") as f:
        write_private(dst, f.read())


def publish(src: StrPath, dst: StrPath, *, durable: bool = False) -> None:
    """Put a fully written file, directory or symlink at `dst` in one step,
    replacing a file (or an empty directory) there. A non-empty directory at
    `dst` is never replaced: OSError (ENOTEMPTY or EEXIST), which is how two
    writers racing to publish the same directory learn that one won.
    `durable` fsyncs `dst`'s directory afterwards."""
    target = posix.fspath(dst)
    posix.replace(posix.fspath(src), target)
    if durable:
        sync_dir(_parent(target))


def move_aside(path: StrPath, dest: StrPath) -> None:
    """Rename `path` to `dest` (in the same file system) before removing it,
    so that a half-removed tree never stands under its real name."""
    posix.rename(posix.fspath(path), posix.fspath(dest))


def swap_symlink(link: StrPath, target: str) -> None:
    """Point the symlink `link` at `target` in one step (a new link beside
    it, renamed over it), as the kubelet's atomic writer swaps `..data`:
    a reader follows the old target or the new one."""
    path = posix.fspath(link)
    tmp = path + "_tmp"
    _unlink(tmp)
    posix.symlink(target, tmp)
    posix.replace(tmp, path)


def _makedirs(path: str, mode: int) -> None:
    """mkdir -p without importing os, as Path.mkdir(parents=True,
    exist_ok=True, mode=mode) does: the missing parents get the default
    mode (under the umask), the directory itself `mode`."""
    try:
        posix.stat(path)
        return
    except FileNotFoundError:
        pass
    parent = _parent(path)
    if parent != path:
        _makedirs(parent, 0o777)
    try:
        posix.mkdir(path, mode)
    except FileExistsError:
        pass
