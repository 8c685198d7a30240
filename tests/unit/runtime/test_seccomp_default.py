"""RuntimeDefault is an allow-list with containerd's semantics (issue 17):
loaded in a forked child, it refuses clone with CLONE_NEWUSER, io_uring,
keyctl and odd personalities with EPERM, answers clone3 with ENOSYS (so the
C library falls back to clone), and allows ordinary work. The old deny-list
let clone(CLONE_NEWUSER), io_uring_setup and personality through."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import signal

import pytest

from runtime.linux import seccomp

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="x86_64 syscall numbers")

SYS = {"clone": 56, "clone3": 435, "io_uring_setup": 425, "keyctl": 250, "personality": 135,
       "getpid": 39, "unshare": 272}  # fmt: skip
CLONE_NEWUSER = 0x10000000


def run_filtered(caps: list[str]) -> dict[str, int]:
    """errno of each probe (0: allowed) in a child under the default profile."""
    bpf = seccomp.build(seccomp.default_profile(caps), caps)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            libc = ctypes.CDLL(None, use_errno=True)
            libc.syscall.restype = ctypes.c_long
            libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS, as the monitor does first
            seccomp.load(bpf, no_new_privs=True)

            def probe(name: str, *args: int) -> int:
                ctypes.set_errno(0)
                ret = libc.syscall(ctypes.c_long(SYS[name]), *[ctypes.c_long(a) for a in args])
                if ret == 0 and name == "clone":
                    os._exit(0)  # the clone's child
                if ret > 0 and name == "clone":
                    os.waitpid(ret, 0)
                return ctypes.get_errno() if ret < 0 else 0

            results = [
                probe("clone", CLONE_NEWUSER | signal.SIGCHLD, 0, 0, 0, 0),
                probe("clone3", 0, 0),
                probe("io_uring_setup", 1, 0),
                probe("keyctl", 0, 0),
                probe("personality", 0x0400000),
                probe("personality", 0xFFFFFFFF),
                probe("getpid"),
                probe("unshare", CLONE_NEWUSER),
            ]
            os.write(w, bytes(results))
        finally:
            os._exit(0)
    os.close(w)
    data = os.read(r, 64)
    os.close(r)
    os.waitpid(pid, 0)
    names = ["clone_newuser", "clone3", "io_uring", "keyctl", "personality_odd",
             "personality_query", "getpid", "unshare"]  # fmt: skip
    return dict(zip(names, data, strict=True))


def test_runtime_default_is_an_allow_list() -> None:
    got = run_filtered(["CHOWN", "NET_BIND_SERVICE"])
    assert got == {
        "clone_newuser": errno.EPERM,
        "clone3": errno.ENOSYS,
        "io_uring": errno.EPERM,
        "keyctl": errno.EPERM,
        "personality_odd": errno.EPERM,
        "personality_query": 0,
        "getpid": 0,
        "unshare": errno.EPERM,
    }


def test_sys_admin_may_clone_namespaces() -> None:
    got = run_filtered(["SYS_ADMIN"])
    # not refused by the filter (EPERM); the kernel may still say no for its
    # own reasons (unshare: EINVAL in a process whose root was changed)
    assert got["clone_newuser"] != errno.EPERM and got["unshare"] != errno.EPERM, got
    assert got["io_uring"] == errno.EPERM
