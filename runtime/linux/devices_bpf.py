"""Device access control on cgroup v2: an eBPF program of type
BPF_PROG_TYPE_CGROUP_DEVICE built from devices-cgroup rules, loaded with
bpf(2) (through machinery.libc) and attached to a cgroup directory.

cgroup v1 has `devices.allow`/`devices.deny` files; v2 has none. Instead the
kernel runs every program attached to a cgroup (and, with BPF_F_ALLOW_MULTI,
to its ancestors) on each device open and mknod by a member process, with a
context of `{u32 access_type, u32 major, u32 minor}`; an access goes through
only if every program returns 1.

Rules use v1 syntax: "TYPE MAJOR:MINOR ACCESS", TYPE one of `a` (any), `b`,
`c`; MAJOR and MINOR a number or `*`; ACCESS letters from `rwm`. A lone "a"
allows everything. The program denies whatever no rule allows.

`set_device_rules(cgroup_dir, rules)` replaces whatever device programs are
attached directly to the cgroup with one built from `rules`, so calling it
again leaves exactly the new rules in force. Nothing here decides which rules
a container gets; the caller does.
"""

from __future__ import annotations

import contextlib
import errno
import os
import struct
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from machinery import libc

# --- kernel ABI (include/uapi/linux/bpf.h; bpf(2) itself is machinery.libc's) --

BPF_PROG_TYPE_CGROUP_DEVICE = 15
BPF_CGROUP_DEVICE = 6  # attach type

BPF_F_ALLOW_OVERRIDE = 1
BPF_F_ALLOW_MULTI = 2

# the most programs one cgroup can hold per attach type
_MAX_ATTACHED = 64

# bpf_cgroup_dev_ctx: access_type = (access << 16) | device type
DEV_BLOCK = 1
DEV_CHAR = 2
ACC_MKNOD = 1
ACC_READ = 2
ACC_WRITE = 4
_CTX_ACCESS_TYPE = 0
_CTX_MAJOR = 4
_CTX_MINOR = 8

_TYPES = {"b": DEV_BLOCK, "c": DEV_CHAR}
_ACCESS_BITS = {"r": ACC_READ, "w": ACC_WRITE, "m": ACC_MKNOD}
_ALL_ACCESS = ACC_READ | ACC_WRITE | ACC_MKNOD

# instruction encoding: class | operation | source
_LDX = 0x01
_ALU32 = 0x04
_JMP = 0x05
_JMP32 = 0x06
_ALU64 = 0x07
_MEM_W = 0x60  # BPF_MEM mode, 32-bit size
_OP_AND = 0x50
_OP_RSH = 0x70
_OP_MOV = 0xB0
_OP_JNE = 0x50
_OP_JSET = 0x40
_OP_EXIT = 0x90
_SRC_K = 0x00  # immediate operand

LDX_W = _LDX | _MEM_W  # dst = *(u32 *)(src + off)
AND32_K = _ALU32 | _OP_AND | _SRC_K  # (u32) dst &= imm
RSH32_K = _ALU32 | _OP_RSH | _SRC_K  # (u32) dst >>= imm
MOV64_K = _ALU64 | _OP_MOV | _SRC_K  # dst = imm
JNE32_K = _JMP32 | _OP_JNE | _SRC_K  # if (u32) dst != imm: pc += off
JSET32_K = _JMP32 | _OP_JSET | _SRC_K  # if (u32) dst & imm: pc += off
EXIT = _JMP | _OP_EXIT

# registers the program keeps its inputs in
R_RET, R_CTX, R_TYPE, R_ACCESS, R_MAJOR, R_MINOR = 0, 1, 2, 3, 4, 5


class Insn(NamedTuple):
    """One eBPF instruction: `off` is a jump distance counted in
    instructions from the one after this."""

    code: int
    dst: int = 0
    src: int = 0
    off: int = 0
    imm: int = 0

    def encode(self) -> bytes:
        # dst_reg:4 then src_reg:4 as C bitfields: dst is the low nibble on
        # little-endian machines, the high one on big-endian ones
        little = sys.byteorder == "little"
        regs = (self.src << 4) | self.dst if little else (self.dst << 4) | self.src
        imm = self.imm - (1 << 32) if self.imm >= 1 << 31 else self.imm
        return struct.pack("=BBhi", self.code, regs, self.off, imm)


# --- rules --------------------------------------------------------------------


class DeviceRuleError(ValueError):
    """A rule that is not "TYPE MAJOR:MINOR ACCESS" (or a lone "a")."""


@dataclass(frozen=True)
class DeviceRule:
    """`type` is "a", "b" or "c"; `major`/`minor` None mean any; `access`
    is the bitmask of ACC_READ/ACC_WRITE/ACC_MKNOD it allows."""

    type: str
    major: int | None
    minor: int | None
    access: int

    @property
    def allows_everything(self) -> bool:
        return (
            self.type == "a"
            and self.major is None
            and self.minor is None
            and self.access == _ALL_ACCESS
        )


def _parse_number(text: str, what: str, rule: str) -> int | None:
    if text == "*":
        return None
    if not text.isdigit():
        raise DeviceRuleError(f"device rule {rule!r}: {what} {text!r} is not a number or '*'")
    value = int(text)
    if value >= 1 << 32:
        raise DeviceRuleError(f"device rule {rule!r}: {what} {value} does not fit in 32 bits")
    return value


def parse_rule(rule: str) -> DeviceRule:
    """ "c 1:3 rwm" -> DeviceRule("c", 1, 3, READ|WRITE|MKNOD); "a" alone
    means every device, every access (as in v1's devices.allow)."""
    fields = rule.split()
    if fields == ["a"]:
        return DeviceRule("a", None, None, _ALL_ACCESS)
    if len(fields) != 3:
        raise DeviceRuleError(
            f"device rule {rule!r}: want 'TYPE MAJOR:MINOR ACCESS' (e.g. 'c 1:3 rwm') or 'a'"
        )
    kind, numbers, letters = fields
    if kind not in ("a", "b", "c"):
        raise DeviceRuleError(f"device rule {rule!r}: type {kind!r} is not one of a, b, c")
    major_text, sep, minor_text = numbers.partition(":")
    if not sep:
        raise DeviceRuleError(f"device rule {rule!r}: {numbers!r} is not MAJOR:MINOR")
    major = _parse_number(major_text, "major", rule)
    minor = _parse_number(minor_text, "minor", rule)
    access = 0
    for ch in letters:
        bit = _ACCESS_BITS.get(ch)
        if bit is None:
            raise DeviceRuleError(
                f"device rule {rule!r}: access {letters!r} may only hold r, w and m"
            )
        access |= bit
    return DeviceRule(kind, major, minor, access)


def parse_rules(rules: Iterable[str | DeviceRule]) -> list[DeviceRule]:
    return [r if isinstance(r, DeviceRule) else parse_rule(r) for r in rules]


# --- program ------------------------------------------------------------------


def _rule_block(rule: DeviceRule) -> list[Insn]:
    """Instructions that return 1 when the access matches `rule` and fall
    through to the next block otherwise."""
    tests: list[tuple[int, int, int]] = []  # (opcode, register, imm): jump away if true
    if rule.type != "a":
        tests.append((JNE32_K, R_TYPE, _TYPES[rule.type]))
    if rule.access != _ALL_ACCESS:
        # any requested bit outside the allowed ones fails the rule
        tests.append((JSET32_K, R_ACCESS, _ALL_ACCESS & ~rule.access))
    if rule.major is not None:
        tests.append((JNE32_K, R_MAJOR, rule.major))
    if rule.minor is not None:
        tests.append((JNE32_K, R_MINOR, rule.minor))
    block: list[Insn] = []
    for i, (code, reg, imm) in enumerate(tests):
        # skip the rest of the tests and the two instructions of "return 1"
        block.append(Insn(code, reg, 0, len(tests) - i - 1 + 2, imm))
    block += [Insn(MOV64_K, R_RET, 0, 0, 1), Insn(EXIT)]
    return block


def build_program(rules: Iterable[str | DeviceRule]) -> list[Insn]:
    """The instructions of a device program allowing exactly `rules`:
    load the context into r2..r5, one block per rule (the first that
    matches returns 1), then return 0."""
    parsed = parse_rules(rules)
    insns = [
        Insn(LDX_W, R_TYPE, R_CTX, _CTX_ACCESS_TYPE),
        Insn(AND32_K, R_TYPE, 0, 0, 0xFFFF),
        Insn(LDX_W, R_ACCESS, R_CTX, _CTX_ACCESS_TYPE),
        Insn(RSH32_K, R_ACCESS, 0, 0, 16),
        Insn(LDX_W, R_MAJOR, R_CTX, _CTX_MAJOR),
        Insn(LDX_W, R_MINOR, R_CTX, _CTX_MINOR),
    ]
    for rule in parsed:
        if rule.access == 0:
            continue  # allows nothing
        insns += _rule_block(rule)
        if rule.allows_everything:
            # the verifier refuses unreachable instructions, so stop here
            return insns
    insns += [Insn(MOV64_K, R_RET, 0, 0, 0), Insn(EXIT)]
    return insns


def assemble(insns: Iterable[Insn]) -> bytes:
    return b"".join(i.encode() for i in insns)


# --- bpf(2) -------------------------------------------------------------------


class DeviceFilterError(OSError):
    """The kernel refused to load or attach a device program; `log` holds
    the verifier's message when loading failed."""

    def __init__(self, err: int, message: str, log: str = "") -> None:
        super().__init__(err, message)
        self.log = log


_LOG_SIZE = 1 << 20


def _refused(what: str, exc: OSError) -> DeviceFilterError:
    err = exc.errno or errno.EINVAL
    return DeviceFilterError(err, f"{what}: {os.strerror(err)}")


def load_program(insns: list[Insn]) -> int:
    """Load a cgroup device program; returns its fd (the caller closes it).
    On refusal the load is repeated with a verifier log, which the raised
    DeviceFilterError carries (`log`, and in its message)."""
    code = assemble(insns)
    what = f"load device program ({len(insns)} instructions)"
    try:
        # without a log first: a verbose log of a long program that passes
        # can overflow the buffer, which fails the load (ENOSPC)
        return libc.bpf_prog_load(
            BPF_PROG_TYPE_CGROUP_DEVICE, code, b"Apache-2.0", b"skiff_devices"
        )
    except OSError:
        pass
    try:
        return libc.bpf_prog_load(
            BPF_PROG_TYPE_CGROUP_DEVICE, code, b"Apache-2.0", b"skiff_devices", log_size=_LOG_SIZE
        )  # the second try passed after all (a transient failure)
    except libc.BpfLoadError as exc:
        err = exc.errno or errno.EINVAL
        detail = f"; verifier: {exc.log}" if exc.log else ""
        raise DeviceFilterError(err, f"{what}: {os.strerror(err)}{detail}", exc.log) from None


def query_programs(cgroup_fd: int) -> tuple[list[int], int]:
    """The ids of the device programs attached directly to the cgroup and
    the flags they were attached with."""
    try:
        return libc.bpf_prog_query(cgroup_fd, BPF_CGROUP_DEVICE, _MAX_ATTACHED)
    except OSError as exc:
        raise _refused("query device programs", exc) from None


def _attach(cgroup_fd: int, prog_fd: int, flags: int) -> None:
    try:
        libc.bpf_prog_attach(cgroup_fd, prog_fd, BPF_CGROUP_DEVICE, flags)
    except OSError as exc:
        raise _refused(f"attach device program (flags {flags:#x})", exc) from None


def _detach_id(cgroup_fd: int, prog_id: int) -> None:
    try:
        prog_fd = libc.bpf_prog_get_fd_by_id(prog_id)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return  # gone already
        raise _refused(f"open device program id {prog_id}", exc) from None
    try:
        libc.bpf_prog_detach(cgroup_fd, prog_fd, BPF_CGROUP_DEVICE)
    except OSError as exc:
        raise _refused(f"detach device program id {prog_id}", exc) from None
    finally:
        os.close(prog_fd)


def attach_rules(cgroup_fd: int, rules: Iterable[str | DeviceRule]) -> None:
    """Build, load and attach a program for `rules` to the cgroup open as
    `cgroup_fd`, replacing the device programs attached there before.

    In multi mode the new program is attached before the old ones are
    detached: in between, both run and an access needs both to allow it,
    so there is no moment without a filter. A cgroup whose program was
    attached without BPF_F_ALLOW_MULTI holds one program; attaching with
    the same flags swaps it in one step."""
    prog_fd = load_program(build_program(rules))
    try:
        old_ids, old_flags = query_programs(cgroup_fd)
        if old_ids and not old_flags & BPF_F_ALLOW_MULTI:
            _attach(cgroup_fd, prog_fd, old_flags)
            return
        _attach(cgroup_fd, prog_fd, BPF_F_ALLOW_MULTI)
        for prog_id in old_ids:
            _detach_id(cgroup_fd, prog_id)
    finally:
        # the attachment holds its own reference to the program
        os.close(prog_fd)


def set_device_rules(cgroup_dir: str | Path, rules: Iterable[str | DeviceRule]) -> None:
    """Restrict the processes in the cgroup v2 directory `cgroup_dir` to
    the devices `rules` allow. Raises DeviceFilterError (an OSError) naming
    the cgroup, with the verifier's log when the kernel refused the program;
    a malformed rule is EINVAL."""
    try:
        parsed = parse_rules(rules)
    except DeviceRuleError as exc:
        raise DeviceFilterError(errno.EINVAL, f"cgroup {cgroup_dir}: {exc}") from None
    try:
        fd = os.open(cgroup_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise DeviceFilterError(
            exc.errno or errno.EINVAL, f"cgroup {cgroup_dir}: open: {exc.strerror}"
        ) from None
    try:
        attach_rules(fd, parsed)
    except DeviceFilterError as exc:
        raise DeviceFilterError(
            exc.errno or errno.EINVAL,
            f"cgroup {cgroup_dir}: device rules: {exc.strerror}",
            exc.log,
        ) from None
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
