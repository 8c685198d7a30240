"""One lazily loaded `ctypes.CDLL(use_errno=True)` and thin wrappers for the
syscalls Python 3.11 lacks (unshare, setns, mount, umount2, pivot_root,
sethostname, prctl, capset/capget).

Every wrapper raises `OSError` with errno and a message naming the call and
its arguments. Nothing here decides policy; callers do. This module must never
be used to switch namespaces in a multi-threaded process (the gRPC server):
only the single-threaded monitor and its children call `setns`/`unshare`.
"""

from __future__ import annotations

import ctypes
import os
from functools import cache

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_MOVE = 8192
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_SLAVE = 1 << 19
MS_SHARED = 1 << 20
MS_STRICTATIME = 1 << 24

MNT_DETACH = 2

PR_SET_PDEATHSIG = 1
PR_GET_DUMPABLE = 3
PR_SET_NAME = 15
PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_RAISE = 2
PR_CAP_AMBIENT_CLEAR_ALL = 4
PR_SET_KEEPCAPS = 8


@cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> int:
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return ret


def _b(s: str | bytes | None) -> bytes | None:
    if s is None:
        return None
    return s if isinstance(s, bytes) else s.encode()


def unshare(flags: int) -> None:
    _check(_libc().unshare(ctypes.c_int(flags)), f"unshare({flags:#x})")


def setns(fd: int, nstype: int = 0) -> None:
    _check(_libc().setns(ctypes.c_int(fd), ctypes.c_int(nstype)), f"setns({fd}, {nstype:#x})")


def setns_path(path: str, nstype: int = 0) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        setns(fd, nstype)
    except OSError as exc:
        raise OSError(exc.errno, f"setns {path}: {exc.strerror}") from None
    finally:
        os.close(fd)


def mount(
    source: str | None, target: str, fstype: str | None, flags: int = 0, data: str | None = None
) -> None:
    ret = _libc().mount(_b(source), _b(target), _b(fstype), ctypes.c_ulong(flags), _b(data))
    _check(ret, f"mount {source!r} on {target!r} type {fstype!r} flags {flags:#x} data {data!r}")


def umount2(target: str, flags: int = 0) -> None:
    _check(_libc().umount2(_b(target), ctypes.c_int(flags)), f"umount2({target!r}, {flags})")


def pivot_root(new_root: str, put_old: str) -> None:
    nr = 155  # SYS_pivot_root on x86_64
    if os.uname().machine == "aarch64":
        nr = 41
    ret = _libc().syscall(ctypes.c_long(nr), _b(new_root), _b(put_old))
    _check(ret, f"pivot_root({new_root!r}, {put_old!r})")


def sethostname(name: str) -> None:
    raw = name.encode()
    _check(_libc().sethostname(raw, ctypes.c_size_t(len(raw))), f"sethostname({name!r})")


def prctl(option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0, arg5: int = 0) -> int:
    ret = _libc().prctl(
        ctypes.c_int(option),
        ctypes.c_ulong(arg2),
        ctypes.c_ulong(arg3),
        ctypes.c_ulong(arg4),
        ctypes.c_ulong(arg5),
    )
    return _check(ret, f"prctl({option}, {arg2})")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


_CAP_V3 = 0x20080522


def capset(effective: int, permitted: int, inheritable: int) -> None:
    hdr = _CapHeader(_CAP_V3, 0)
    data = (_CapData * 2)()
    for i in range(2):
        shift = 32 * i
        data[i].effective = (effective >> shift) & 0xFFFFFFFF
        data[i].permitted = (permitted >> shift) & 0xFFFFFFFF
        data[i].inheritable = (inheritable >> shift) & 0xFFFFFFFF
    _check(_libc().capset(ctypes.byref(hdr), data), "capset")


def setgroups(groups: list[int]) -> None:
    os.setgroups(groups)


def set_name(name: str) -> None:
    """The calling thread's comm (what ps -o comm and top show), max 15 bytes."""
    buf = ctypes.create_string_buffer(name.encode()[:15])
    _libc().prctl(
        ctypes.c_int(PR_SET_NAME), buf, ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)
    )


def release_free_memory() -> None:
    """Give the pages glibc malloc holds free (in every arena) back to the
    kernel: malloc_trim(0). Startup leaves many (imports, parsing); free()
    alone only returns the top of the heap. Nothing on other C libraries."""
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is not None:
        trim(ctypes.c_size_t(0))


def syscall_available(name: str) -> bool:
    return hasattr(_libc(), name)
