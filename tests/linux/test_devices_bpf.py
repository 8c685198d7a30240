"""Device access control on cgroup v2 (runtime/linux/devices_bpf.py).

The pure tests run the instruction builder's output through a small
interpreter of the few eBPF instructions it emits and compare each verdict
with the rules read directly. The root tests attach programs to real cgroup2
directories through `CgroupV2.allow_devices` and check what a process inside
may open and mknod; every cgroup, process and file they make is removed
afterwards, also when they fail.
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.linux import cgroups, devices_bpf
from runtime.linux.devices_bpf import (
    ACC_MKNOD,
    ACC_READ,
    ACC_WRITE,
    DEV_BLOCK,
    DEV_CHAR,
    DeviceFilterError,
    DeviceRule,
    DeviceRuleError,
    Insn,
    build_program,
    parse_rule,
)
from tests.harness.cgroup import remove_cgroup_tree
from tests.harness.netns import unique_name

# --- an interpreter for the instructions the builder emits ------------------

_U32 = 0xFFFFFFFF


def run_program(insns: list[Insn], dev_type: int, access: int, major: int, minor: int) -> int:
    ctx = struct.pack("=III", (access << 16) | dev_type, major, minor)
    regs = [0] * 11
    pc = 0
    for _ in range(10 * len(insns) + 10):  # the builder never jumps backwards
        assert 0 <= pc < len(insns), f"pc {pc} left the program"
        ins = insns[pc]
        pc += 1
        imm = ins.imm & _U32
        if ins.code == devices_bpf.LDX_W:
            assert ins.src == devices_bpf.R_CTX
            regs[ins.dst] = struct.unpack_from("=I", ctx, ins.off)[0]
        elif ins.code == devices_bpf.AND32_K:
            regs[ins.dst] = (regs[ins.dst] & imm) & _U32
        elif ins.code == devices_bpf.RSH32_K:
            regs[ins.dst] = (regs[ins.dst] & _U32) >> imm
        elif ins.code == devices_bpf.MOV64_K:
            regs[ins.dst] = ins.imm
        elif ins.code == devices_bpf.JNE32_K:
            if regs[ins.dst] & _U32 != imm:
                pc += ins.off
        elif ins.code == devices_bpf.JSET32_K:
            if regs[ins.dst] & imm:
                pc += ins.off
        elif ins.code == devices_bpf.EXIT:
            return regs[devices_bpf.R_RET]
        else:
            raise AssertionError(f"unexpected opcode {ins.code:#x} at {pc - 1}")
    raise AssertionError("program did not exit")


def reference(rules: list[str], dev_type: int, access: int, major: int, minor: int) -> int:
    """The verdict read straight off the rules."""
    for rule in map(parse_rule, rules):
        if rule.type != "a" and devices_bpf._TYPES[rule.type] != dev_type:
            continue
        if rule.major is not None and rule.major != major:
            continue
        if rule.minor is not None and rule.minor != minor:
            continue
        if access & ~rule.access:
            continue
        return 1
    return 0


def reachable(insns: list[Insn]) -> set[int]:
    seen: set[int] = set()
    todo = [0]
    while todo:
        pc = todo.pop()
        if pc in seen:
            continue
        assert 0 <= pc < len(insns), f"jump to {pc} outside the program"
        seen.add(pc)
        ins = insns[pc]
        if ins.code == devices_bpf.EXIT:
            continue
        todo.append(pc + 1)
        if ins.code in (devices_bpf.JNE32_K, devices_bpf.JSET32_K):
            todo.append(pc + 1 + ins.off)
    return seen


ACCESSES = [
    a
    for a in range(1, 8)  # every non-empty combination of mknod, read, write
]
DEVICES = [
    (t, ma, mi)
    for t in (DEV_BLOCK, DEV_CHAR)
    for ma, mi in [(1, 3), (1, 5), (1, 7), (5, 2), (136, 0), (136, 9), (137, 0), (7, 0), (8, 1)]
]
RULE_SETS = [
    [],
    ["c 1:3 rwm", "c 1:5 rwm"],
    ["c 136:* rwm"],
    ["b *:* m", "c *:* m"],
    ["a 1:3 r"],
    ["c *:7 w", "b 8:* rw"],
    ["c 1:3 r", "c 1:3 w"],
    ["a"],
    ["c 1:3 rwm", "a *:* rwm", "b 7:0 r"],
    cgroups.DEFAULT_DEVICE_RULES,
]


@pytest.mark.parametrize("rules", RULE_SETS, ids=lambda r: ",".join(r) or "none")
def test_program_verdicts_match_the_rules(rules: list[str]) -> None:
    insns = build_program(rules)
    assert reachable(insns) == set(range(len(insns))), "unreachable instructions"
    for (dev_type, major, minor), access in itertools.product(DEVICES, ACCESSES):
        got = run_program(insns, dev_type, access, major, minor)
        want = reference(rules, dev_type, access, major, minor)
        assert got == want, (rules, dev_type, access, major, minor)


def test_wildcards_and_any_type() -> None:
    prog = build_program(["c 136:* rwm", "b *:* m", "a 1:3 r"])
    rwm = ACC_READ | ACC_WRITE | ACC_MKNOD
    assert run_program(prog, DEV_CHAR, rwm, 136, 0) == 1
    assert run_program(prog, DEV_CHAR, rwm, 136, 4095) == 1
    assert run_program(prog, DEV_CHAR, ACC_READ, 137, 0) == 0
    assert run_program(prog, DEV_BLOCK, ACC_READ, 136, 0) == 0
    assert run_program(prog, DEV_BLOCK, ACC_MKNOD, 259, 12) == 1
    assert run_program(prog, DEV_BLOCK, ACC_MKNOD | ACC_READ, 259, 12) == 0
    assert run_program(prog, DEV_BLOCK, ACC_READ, 1, 3) == 1
    assert run_program(prog, DEV_CHAR, ACC_READ, 1, 3) == 1
    assert run_program(prog, DEV_CHAR, ACC_READ | ACC_WRITE, 1, 3) == 0


def test_no_rules_denies_everything_and_a_allows_everything() -> None:
    deny = build_program([])
    allow = build_program(["a", "c 1:3 r"])  # nothing after "a" is emitted
    assert allow[-2:] == [Insn(devices_bpf.MOV64_K, 0, 0, 0, 1), Insn(devices_bpf.EXIT)]
    assert reachable(allow) == set(range(len(allow)))
    for (dev_type, major, minor), access in itertools.product(DEVICES, ACCESSES):
        assert run_program(deny, dev_type, access, major, minor) == 0
        assert run_program(allow, dev_type, access, major, minor) == 1


def test_large_numbers_compare_as_unsigned_32_bit() -> None:
    prog = build_program(["c 4294967295:2147483648 r"])
    assert run_program(prog, DEV_CHAR, ACC_READ, 0xFFFFFFFF, 0x80000000) == 1
    assert run_program(prog, DEV_CHAR, ACC_READ, 0xFFFFFFFE, 0x80000000) == 0
    assert prog[8].imm == 0xFFFFFFFF  # after the type and access tests
    # encoded as the signed 32-bit immediate the kernel reads
    assert struct.unpack("=i", prog[8].encode()[4:])[0] == -1


def test_parse_rule() -> None:
    assert parse_rule("c 1:3 rwm") == DeviceRule("c", 1, 3, ACC_READ | ACC_WRITE | ACC_MKNOD)
    assert parse_rule("b *:* m") == DeviceRule("b", None, None, ACC_MKNOD)
    assert parse_rule("  c 136:*   wr ") == DeviceRule("c", 136, None, ACC_READ | ACC_WRITE)
    assert parse_rule("a") == DeviceRule("a", None, None, ACC_READ | ACC_WRITE | ACC_MKNOD)
    assert parse_rule("a") == parse_rule("a *:* rwm")


@pytest.mark.parametrize(
    ("rule", "complaint"),
    [
        ("", "want 'TYPE MAJOR:MINOR ACCESS'"),
        ("c 1:3", "want 'TYPE MAJOR:MINOR ACCESS'"),
        ("c 1:3 rwm extra", "want 'TYPE MAJOR:MINOR ACCESS'"),
        ("x 1:3 rwm", "type 'x' is not one of a, b, c"),
        ("c 1 rwm", "'1' is not MAJOR:MINOR"),
        ("c a:3 rwm", "major 'a' is not a number"),
        ("c 1:-3 rwm", "minor '-3' is not a number"),
        ("c 1:3 rwx", "access 'rwx' may only hold r, w and m"),
        ("c 4294967296:0 r", "major 4294967296 does not fit in 32 bits"),
    ],
)
def test_bad_rules_are_rejected(rule: str, complaint: str) -> None:
    with pytest.raises(DeviceRuleError) as info:
        build_program(["c 1:3 rwm", rule])
    assert repr(rule) in str(info.value)
    assert complaint in str(info.value)


def test_instruction_encoding() -> None:
    # opcode, dst in the low nibble of the register byte, off, imm (little-endian)
    if sys.byteorder != "little":
        pytest.skip("expected bytes written for little-endian machines")
    load = Insn(devices_bpf.LDX_W, devices_bpf.R_MAJOR, devices_bpf.R_CTX, 4)
    assert load.encode() == bytes.fromhex("6114040000000000")
    assert Insn(devices_bpf.MOV64_K, 0, 0, 0, 1).encode() == bytes.fromhex("b700000001000000")
    assert Insn(devices_bpf.JNE32_K, 5, 0, 2, 7).encode() == bytes.fromhex("5605020007000000")
    assert Insn(devices_bpf.EXIT).encode() == bytes.fromhex("9500000000000000")


# --- the kernel ------------------------------------------------------------------


def cgroup2_mount() -> Path | None:
    """Where the unified hierarchy is mounted (/sys/fs/cgroup on a v2 host,
    /sys/fs/cgroup/unified on a hybrid one), or None."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            before, _, after = line.partition(" - ")
            if after.split()[:1] == ["cgroup2"]:
                return Path(before.split()[4])
    return None


CG2 = cgroup2_mount()
needs_cgroup2 = pytest.mark.skipif(CG2 is None, reason="no cgroup2 hierarchy mounted")


@pytest.fixture
def cg2() -> Iterator[cgroups.CgroupV2]:
    """A fresh cgroup2 directory (as a CgroupV2), removed with whatever
    still runs in it afterwards."""
    assert CG2 is not None
    cg = cgroups.CgroupV2(unique_name("skiff-devbpf-", 40), CG2)
    cg.dir.mkdir()
    try:
        yield cg
    finally:
        remove_cgroup_tree(cg.dir)


# runs inside the cgroup: waits for "go" on stdin (sent once the parent has
# moved it in), tries each action, prints "ok" or the errno name for each
CHILD = r"""
import errno, json, os, sys
actions = json.loads(sys.argv[1])
sys.stdin.readline()
out = []
for a in actions:
    try:
        if a["op"] == "open":
            os.close(os.open(a["path"], os.O_WRONLY if a["mode"] == "w" else os.O_RDONLY))
        else:
            kind = {"b": 0o060000, "c": 0o020000}[a["type"]]
            os.mknod(a["path"], kind | 0o600, os.makedev(a["major"], a["minor"]))
            os.unlink(a["path"])
        out.append("ok")
    except OSError as exc:
        out.append(errno.errorcode.get(exc.errno, str(exc.errno)))
print(json.dumps(out))
"""


def run_in_cgroup(cg: cgroups.CgroupV2, actions: list[dict[str, object]]) -> list[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, json.dumps(actions)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        cg.add(proc.pid)
        assert proc.pid in cg.pids()
        out, err = proc.communicate("go\n", timeout=30)
        assert proc.returncode == 0, err
        result: list[str] = json.loads(out)
        return result
    finally:
        if proc.poll() is None:
            proc.kill()  # by its own pid (Popen), never by name
            proc.wait()


def attached_ids(cg: cgroups.CgroupV2) -> list[int]:
    fd = os.open(cg.dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return devices_bpf.query_programs(fd)[0]
    finally:
        os.close(fd)


def opens(*paths: str) -> list[dict[str, object]]:
    return [{"op": "open", "path": p, "mode": "w"} for p in paths]


def mknod(path: Path, kind: str, major: int, minor: int) -> dict[str, object]:
    return {"op": "mknod", "path": str(path), "type": kind, "major": major, "minor": minor}


@pytest.mark.root
@needs_cgroup2
def test_only_allowed_devices_open_and_mknod(cg2: cgroups.CgroupV2) -> None:
    cg2.allow_devices(["c 1:3 rwm", "c 1:5 rwm"])
    assert len(attached_ids(cg2)) == 1
    with tempfile.TemporaryDirectory(prefix="skiff-devbpf-") as tmp:
        got = run_in_cgroup(
            cg2,
            [
                *opens("/dev/null"),
                {"op": "open", "path": "/dev/zero", "mode": "r"},
                *opens("/dev/full"),
                mknod(Path(tmp) / "loop0", "b", 7, 0),
                mknod(Path(tmp) / "null", "c", 1, 3),  # allowed: "m" in c 1:3 rwm
            ],
        )
        assert got == ["ok", "ok", "EPERM", "EPERM", "ok"]
        assert not os.listdir(tmp)
    # the test process itself, outside the cgroup, is not restricted
    os.close(os.open("/dev/full", os.O_WRONLY))


@pytest.mark.root
@needs_cgroup2
def test_calling_again_replaces_the_rules(cg2: cgroups.CgroupV2) -> None:
    cg2.allow_devices(["c 1:3 rwm", "c 1:5 rwm"])
    first = attached_ids(cg2)
    cg2.allow_devices(["c 1:7 rwm"])
    second = attached_ids(cg2)
    assert len(second) == 1 and second != first
    assert run_in_cgroup(cg2, opens("/dev/null", "/dev/zero", "/dev/full")) == [
        "EPERM",
        "EPERM",
        "ok",
    ]
    cg2.allow_devices(["c 1:3 rwm", "c 1:5 rwm"])
    cg2.allow_devices(["c 1:3 rwm", "c 1:5 rwm"])
    assert len(attached_ids(cg2)) == 1
    assert run_in_cgroup(cg2, opens("/dev/null", "/dev/zero", "/dev/full")) == [
        "ok",
        "ok",
        "EPERM",
    ]


@pytest.mark.root
@needs_cgroup2
def test_replaces_a_program_attached_without_allow_multi(cg2: cgroups.CgroupV2) -> None:
    # someone else attached a deny-all program in single-program mode; the
    # cgroup then refuses multi-mode attachments, so it is swapped instead
    prog_fd = devices_bpf.load_program(build_program([]))
    fd = os.open(cg2.dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        devices_bpf._attach(fd, prog_fd, 0)
        (old,) = devices_bpf.query_programs(fd)[0]
    finally:
        os.close(prog_fd)
        os.close(fd)
    cg2.allow_devices(["c 1:3 rwm"])
    ids = attached_ids(cg2)
    assert len(ids) == 1 and ids != [old]
    assert run_in_cgroup(cg2, opens("/dev/null", "/dev/zero")) == ["ok", "EPERM"]


@pytest.mark.root
@needs_cgroup2
def test_default_rules_and_many_rules_load(cg2: cgroups.CgroupV2) -> None:
    cg2.allow_devices(cgroups.DEFAULT_DEVICE_RULES)
    assert run_in_cgroup(cg2, opens("/dev/null", "/dev/full", "/dev/urandom")) == ["ok"] * 3
    many = [f"c {major}:{minor} rw" for major in range(200, 210) for minor in range(50)]
    cg2.allow_devices([*many, "c 1:3 rwm"])
    assert len(attached_ids(cg2)) == 1
    assert run_in_cgroup(cg2, opens("/dev/null", "/dev/full")) == ["ok", "EPERM"]


@pytest.mark.root
def test_verifier_refusal_carries_its_log() -> None:
    # no exit instruction: the verifier refuses the program
    with pytest.raises(DeviceFilterError) as info:
        devices_bpf.load_program([Insn(devices_bpf.MOV64_K, 0, 0, 0, 1)])
    assert info.value.errno == errno.EINVAL
    assert info.value.log
    assert info.value.log in str(info.value)


@pytest.mark.root
@needs_cgroup2
def test_errors_name_the_cgroup(cg2: cgroups.CgroupV2, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(OSError) as bad_rule:
        cg2.allow_devices(["c 1:3 rwm", "c 1:3 rwx"])
    assert bad_rule.value.errno == errno.EINVAL
    assert str(cg2.dir) in str(bad_rule.value) and "'c 1:3 rwx'" in str(bad_rule.value)

    # a program the verifier refuses (reading past the end of the context)
    bad = [Insn(devices_bpf.LDX_W, 2, 1, 12), *build_program([])]
    monkeypatch.setattr(devices_bpf, "build_program", lambda rules: bad)
    with pytest.raises(DeviceFilterError) as refused:
        cg2.allow_devices(["c 1:3 rwm"])
    assert str(cg2.dir) in str(refused.value)
    assert refused.value.log and "verifier: " in str(refused.value)
    assert attached_ids(cg2) == []

    missing = cgroups.CgroupV2(cg2.rel.name + "-missing", cg2.root)
    with pytest.raises(OSError) as gone:
        missing.allow_devices(["c 1:3 rwm"])
    assert gone.value.errno == errno.ENOENT and str(missing.dir) in str(gone.value)
