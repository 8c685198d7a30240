"""Linux capabilities by name, containerd's default set, the CRI add/drop
rules, and applying a set to the current process (bounding set, then
effective/permitted/inheritable after the uid switch).

`apply_*` functions change the calling process's credentials and must only
run in a container child right before exec, never in the runtime.
"""

from __future__ import annotations

import contextlib

from machinery import libc

NAMES = [
    "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID",
    "SETUID", "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST",
    "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO",
    "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
    "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE",
    "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM",
    "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
]  # fmt: skip
INDEX = {name: i for i, name in enumerate(NAMES)}

# containerd's oci.defaultUnixCaps (what a non-privileged container gets).
DEFAULT = [
    "CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID",
    "SETUID", "SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL",
    "AUDIT_WRITE",
]  # fmt: skip


class UnknownCapability(ValueError):
    pass


def normalize(name: str) -> str:
    n = name.upper()
    if n.startswith("CAP_"):
        n = n[4:]
    if n != "ALL" and n not in INDEX:
        raise UnknownCapability(f"unknown capability {name!r}")
    return n


def last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except OSError:
        return len(NAMES) - 1


def compute(add: list[str], drop: list[str], privileged: bool) -> list[str]:
    """containerd's rule: start from the default set (all if privileged);
    ALL in add means every capability; ALL in drop removes everything except
    what is explicitly added."""
    known = NAMES[: last_cap() + 1]
    if privileged:
        return list(known)
    adds = [normalize(a) for a in add]
    drops = [normalize(d) for d in drop]
    caps = list(DEFAULT)
    if "ALL" in adds:
        caps = list(known)
    if "ALL" in drops:
        caps = []
    for a in adds:
        if a != "ALL" and a not in caps:
            caps.append(a)
    for d in drops:
        if d != "ALL" and d not in adds and d in caps:
            caps.remove(d)
    return caps


def mask(names: list[str]) -> int:
    m = 0
    for n in names:
        m |= 1 << INDEX[n]
    return m


def drop_bounding(keep: list[str]) -> None:
    keep_idx = {INDEX[n] for n in keep}
    for i in range(last_cap() + 1):
        if i not in keep_idx:
            with contextlib.suppress(OSError):
                libc.prctl(libc.PR_CAPBSET_DROP, i)


def current_permitted() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapPrm:"):
                return int(line.split()[1], 16)
    return (1 << (last_cap() + 1)) - 1


def set_caps(names: list[str]) -> None:
    """Effective = permitted = inheritable = `names`, limited to what this
    process holds (a runtime inside a restricted container cannot grant
    more than it has)."""
    m = mask(names) & current_permitted()
    libc.capset(m, m, m)
