"""Resolving a path inside a root without ever leaving it, as file
descriptors: the container's mount targets (and the directories made for
them) are opened here and mounted through `/proc/self/fd/N`, so a symlink
swapped in after the check cannot redirect the mount (the CVE-2021-30465
race) and `..` or an absolute symlink cannot climb out (CVE-2017-1002101).

openat2(2) with RESOLVE_IN_ROOT does the walk in the kernel where it exists
(Linux 5.6); otherwise an O_PATH walk, one component at a time with
O_NOFOLLOW, resolves symlinks itself as if the root were `/`. Every fd
returned is O_PATH|O_CLOEXEC; the caller closes it. Standard library and
`machinery.libc` only (the monitor imports this).
"""

from __future__ import annotations

import errno
import os
import stat

from machinery import libc

RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
RESOLVE_IN_ROOT = 0x10
MAX_SYMLINKS = 40


_have_openat2: bool | None = None


def openat2(dirfd: int, path: str, flags: int, resolve: int, mode: int = 0) -> int:
    """The openat2 syscall; OSError(ENOSYS) where the kernel lacks it."""
    return libc.openat2(dirfd, path, flags, resolve, mode)


def has_openat2() -> bool:
    global _have_openat2
    if _have_openat2 is None:
        try:
            os.close(openat2(-100, "/", os.O_PATH, 0))  # AT_FDCWD
            _have_openat2 = True
        except OSError as exc:
            _have_openat2 = exc.errno != errno.ENOSYS
    return _have_openat2


def proc_path(fd: int) -> str:
    """The magic link that names what `fd` refers to."""
    return f"/proc/self/fd/{fd}"


def _components(path: str) -> list[str]:
    return [c for c in path.split("/") if c and c != "."]


def open_in_root(root_fd: int, path: str, no_symlinks: bool = False) -> int:
    """An O_PATH fd for `path` resolved inside the directory `root_fd`:
    symlinks resolve as if it were `/` and `..` stops at it. With
    `no_symlinks`, any symlink on the way is refused (ELOOP)."""
    rel = "/".join(_components(path)) or "."
    if has_openat2():
        resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS
        if no_symlinks:
            resolve |= RESOLVE_NO_SYMLINKS
        return openat2(root_fd, rel, os.O_PATH, resolve)
    return _walk(root_fd, rel, no_symlinks)


def _walk(root_fd: int, rel: str, no_symlinks: bool) -> int:
    """The O_PATH walk for kernels without openat2."""
    stack = [os.dup(root_fd)]  # fds of the directories walked so far
    queue = _components(rel)
    links = 0
    try:
        while queue:
            c = queue.pop(0)
            if c == "..":
                if len(stack) > 1:
                    os.close(stack.pop())
                continue
            fd = os.open(c, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=stack[-1])
            if stat.S_ISLNK(os.fstat(fd).st_mode):
                os.close(fd)
                links += 1
                if no_symlinks or links > MAX_SYMLINKS:
                    raise OSError(errno.ELOOP, f"symlink {c!r} in {rel!r}")
                target = os.readlink(c, dir_fd=stack[-1])
                if target.startswith("/"):
                    while len(stack) > 1:
                        os.close(stack.pop())
                queue = _components(target) + queue
                continue
            stack.append(fd)
        return stack.pop()
    finally:
        for fd in stack:
            os.close(fd)


def _follow_dangling(parent_fd: int, parts: list[str], i: int) -> str:
    """The path to make instead when parts[i] is a symlink to nothing (as
    /etc/resolv.conf -> ../run/... in many images): its target, resolved
    like any other path inside the root."""
    target = os.readlink(parts[i], dir_fd=parent_fd)  # OSError if not a link
    base = [] if target.startswith("/") else parts[:i]
    return "/".join(base + _components(target) + parts[i + 1 :])


def ensure_dir_in_root(root_fd: int, path: str, mode: int = 0o755, _depth: int = 0) -> int:
    """Like `open_in_root`, making missing directories on the way: each one
    with mkdirat in its parent, already resolved and open, then opened with
    O_NOFOLLOW, so no symlink can be slipped in between."""
    parts = _components(path)
    fd = os.dup(root_fd)
    try:
        for i in range(len(parts)):
            try:
                nxt = open_in_root(root_fd, "/".join(parts[: i + 1]))
            except FileNotFoundError:
                if parts[i] == "..":
                    raise
                try:
                    os.mkdir(parts[i], mode, dir_fd=fd)
                except FileExistsError:
                    if _depth >= MAX_SYMLINKS:
                        raise OSError(errno.ELOOP, f"too many symlinks in {path!r}") from None
                    again = _follow_dangling(fd, parts, i)
                    return ensure_dir_in_root(root_fd, again, mode, _depth + 1)
                flags = os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC
                nxt = os.open(parts[i], flags, dir_fd=fd)
            os.close(fd)
            fd = nxt
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            raise NotADirectoryError(errno.ENOTDIR, f"{path!r} is not a directory")
        return fd
    except BaseException:
        os.close(fd)
        raise


def ensure_file_in_root(root_fd: int, path: str, mode: int = 0o644, _depth: int = 0) -> int:
    """An O_PATH fd for a file at `path` inside the root (an empty one made
    if missing, in its parent opened as above, never through a symlink)."""
    try:
        return open_in_root(root_fd, path)
    except FileNotFoundError:
        pass
    parts = _components(path)
    if not parts or parts[-1] == "..":
        raise IsADirectoryError(errno.EISDIR, path)
    parent = ensure_dir_in_root(root_fd, "/".join(parts[:-1]))
    try:
        try:
            fd = os.open(
                parts[-1], os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC,
                mode, dir_fd=parent,
            )  # fmt: skip
            os.close(fd)
        except FileExistsError:
            if _depth >= MAX_SYMLINKS:
                raise OSError(errno.ELOOP, f"too many symlinks in {path!r}") from None
            try:
                return open_in_root(root_fd, path)  # made meanwhile
            except FileNotFoundError:
                again = _follow_dangling(parent, parts, len(parts) - 1)
            # (the parent as resolved: a relative link is relative to it)
            return ensure_file_in_root(root_fd, again, mode, _depth + 1)
        return open_in_root(root_fd, path)
    finally:
        os.close(parent)
