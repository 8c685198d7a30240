"""A pod's "pause" process without an image: a tiny static x86-64 ELF,
assembled here from its bytes, that only calls pause(2) in a loop. The
sandbox monitor execs it (with SIGCHLD ignored, so the kernel reaps
orphans) to hold the pod's namespaces for a few kilobytes instead of a
Python interpreter. Other machines get None and keep the Python holder.

Writes one file; never runs anything.
"""

from __future__ import annotations

import platform
import struct

from machinery.atomicfile import write_atomic

BASE = 0x400000

# loop: mov eax, 34 (SYS_pause); syscall; jmp loop
CODE_X86_64 = bytes.fromhex("b8220000000f05ebf7")


def elf_x86_64(code: bytes) -> bytes:
    ehsize, phsize = 64, 56
    entry = BASE + ehsize + phsize
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    header = ident + struct.pack(
        "<HHIQQQIHHHHHH",
        2,  # ET_EXEC
        62,  # EM_X86_64
        1,  # EV_CURRENT
        entry,
        ehsize,  # program headers right after this header
        0,  # no section headers
        0,
        ehsize,
        phsize,
        1,
        0,
        0,
        0,
    )
    size = ehsize + phsize + len(code)
    phdr = struct.pack("<IIQQQQQQ", 1, 5, 0, BASE, BASE, size, size, 0x1000)  # PT_LOAD, R+X
    return header + phdr + code


def ensure_pause(path: str) -> str | None:
    """Write the pause binary at `path` if this machine can run it; return
    the path, or None on machines we have no code for."""
    if platform.machine() != "x86_64":
        return None
    data = elf_x86_64(CODE_X86_64)
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return path
    except OSError:
        pass
    write_atomic(path, data, durable=False, mode=0o755)  # made again when missing
    return path
