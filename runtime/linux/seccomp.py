"""Seccomp: loading a prebuilt classic-BPF filter into the current process
(in the monitor's child, right before exec), and building filters from
profiles in the runtime through libseccomp (ctypes, `seccomp_export_bpf`).

Loading changes the calling process irrevocably: `load` must only be called
in a container child. Building never loads anything.
"""

from __future__ import annotations

import ctypes

from runtime.linux import libc

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def load(bpf: bytes, no_new_privs: bool) -> None:
    """Install `bpf` (an array of struct sock_filter, 8 bytes each)."""
    if len(bpf) % 8:
        raise ValueError("seccomp program is not a whole number of instructions")
    buf = ctypes.create_string_buffer(bpf, len(bpf))
    prog = _SockFprog(len(bpf) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog))


def build(profile: dict[str, object]) -> bytes:
    raise NotImplementedError("seccomp filters are not built yet")


def default_profile(caps: list[str]) -> dict[str, object]:
    return {}
