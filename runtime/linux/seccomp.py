"""Seccomp: loading a prebuilt classic-BPF filter into the current process
(in the monitor's child, right before exec), and building filters from
profiles in the runtime through libseccomp (`machinery.libc.seccomp_compile`).

Loading changes the calling process irrevocably: `load` must only be called
in a container child. Building never loads anything.
"""

from __future__ import annotations

import errno as errno_mod
from typing import Any

from machinery import libc


def load(bpf: bytes, no_new_privs: bool) -> None:
    """Install `bpf` (an array of struct sock_filter, 8 bytes each)."""
    libc.seccomp_set_filter(bpf)


ACT_KILL_PROCESS = 0x80000000
ACT_KILL = 0x00000000
ACT_TRAP = 0x00030000
ACT_ERRNO = 0x00050000
ACT_TRACE = 0x7FF00000
ACT_LOG = 0x7FFC0000
ACT_ALLOW = 0x7FFF0000

CMP = {
    "SCMP_CMP_NE": 1,
    "SCMP_CMP_LT": 2,
    "SCMP_CMP_LE": 3,
    "SCMP_CMP_EQ": 4,
    "SCMP_CMP_GE": 5,
    "SCMP_CMP_GT": 6,
    "SCMP_CMP_MASKED_EQ": 7,
}


def action(name: str, errno_ret: int | None) -> int:
    ret = errno_mod.EPERM if errno_ret is None else errno_ret
    table = {
        "SCMP_ACT_KILL": ACT_KILL,
        "SCMP_ACT_KILL_THREAD": ACT_KILL,
        "SCMP_ACT_KILL_PROCESS": ACT_KILL_PROCESS,
        "SCMP_ACT_TRAP": ACT_TRAP,
        "SCMP_ACT_ERRNO": ACT_ERRNO | (ret & 0xFFFF),
        "SCMP_ACT_TRACE": ACT_TRACE | (ret & 0xFFFF),
        "SCMP_ACT_LOG": ACT_LOG,
        "SCMP_ACT_ALLOW": ACT_ALLOW,
    }
    if name not in table:
        raise ValueError(f"unknown seccomp action {name!r}")
    return table[name]


def build(profile: dict[str, Any], caps: list[str] | None = None) -> bytes:
    """Compile an OCI/Docker seccomp JSON profile for the native
    architecture into classic BPF. Rules whose `includes.caps` are not all
    in `caps` (or whose `excludes.caps` are) are skipped, as Docker does;
    unknown syscall names are skipped too."""
    held = set(caps or [])
    default = action(
        str(profile.get("defaultAction", "SCMP_ACT_ALLOW")), profile.get("defaultErrnoRet")
    )
    rules: list[libc.SeccompRule] = []
    for rule in profile.get("syscalls") or []:
        inc = [
            c.upper().removeprefix("CAP_") for c in (rule.get("includes") or {}).get("caps") or []
        ]
        exc = [
            c.upper().removeprefix("CAP_") for c in (rule.get("excludes") or {}).get("caps") or []
        ]
        if any(c not in held for c in inc) or any(c in held for c in exc):
            continue
        act = action(rule["action"], rule.get("errnoRet"))
        if act == default:
            continue
        names = list(rule.get("names") or []) + ([rule["name"]] if rule.get("name") else [])
        args = [
            (int(a["index"]), CMP[a["op"]], int(a.get("value", 0)), int(a.get("valueTwo", 0)))
            for a in rule.get("args") or []
        ]
        rules.extend((act, name, args) for name in names)
    import tempfile  # here: the monitor imports this module and stays small

    with tempfile.TemporaryFile() as f:
        libc.seccomp_compile(default, rules, f.fileno())
        f.seek(0)
        return f.read()


def default_profile(caps: list[str]) -> dict[str, Any]:
    """RuntimeDefault: containerd's default profile, an allow-list
    (runtime.linux.seccomp_default)."""
    from runtime.linux import seccomp_default

    return seccomp_default.profile(caps)
