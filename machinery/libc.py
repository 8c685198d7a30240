"""The one binding of the C library (and libseccomp): the only module that
imports ctypes.

Python 3.11 lacks unshare, setns, mount, umount2, pivot_root, sethostname,
prctl, capset, openat2, bpf and the seccomp calls; each wrapper here calls
one of them through a lazily loaded `CDLL(None, use_errno=True)` and raises
`OSError` with the errno and a message naming the call and its arguments.
Nothing here decides policy (which namespaces, which mounts, which rules);
callers do.

Loading is lazy and cheap on purpose: importing this module loads only
`posix`, and `setns` goes through `_ctypes` directly, because the CNI plugin
(a short-lived process that must start in a few milliseconds) switches
network namespaces with it and `import ctypes` alone costs it ~5 ms. The
rest loads ctypes on first use.

Never switch namespaces (`setns`, `unshare`) in a multi-threaded process
(a gRPC server): only single-threaded processes (the container monitor and
its children, the CNI plugin) may, because the kernel switches the calling
thread alone.
"""

from __future__ import annotations

import posix

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ctypes
    from collections.abc import Iterable, Sequence

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
PR_SET_KEEPCAPS = 8
PR_SET_NAME = 15
PR_SET_SECCOMP = 22
PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_RAISE = 2
PR_CAP_AMBIENT_CLEAR_ALL = 4

SECCOMP_MODE_FILTER = 2

# glibc's mallopt parameter for the arena limit (M_ARENA_MAX).
M_ARENA_MAX = -8

# syscall numbers that differ by architecture (asm/unistd.h); openat2 has
# the same number everywhere (the generic table).
_SYS = {
    "x86_64": {"pivot_root": 155, "bpf": 321},
    "aarch64": {"pivot_root": 41, "bpf": 280},
}
SYS_OPENAT2 = 437

_cdll: ctypes.CDLL | None = None


def _ct() -> ctypes.CDLL:
    """The C library, loaded on first use."""
    global _cdll
    if _cdll is None:
        import ctypes

        _cdll = ctypes.CDLL(None, use_errno=True)
        _cdll.syscall.restype = ctypes.c_long
    return _cdll


class _Types:
    """The C structures, defined once on first use (defining them needs ctypes)."""

    def __init__(self) -> None:
        import ctypes

        u32, u64 = ctypes.c_uint32, ctypes.c_uint64

        class OpenHow(ctypes.Structure):
            _fields_ = [("flags", u64), ("mode", u64), ("resolve", u64)]

        class CapHeader(ctypes.Structure):
            _fields_ = [("version", u32), ("pid", ctypes.c_int)]

        class CapData(ctypes.Structure):
            _fields_ = [("effective", u32), ("permitted", u32), ("inheritable", u32)]

        class SockFprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        class ArgCmp(ctypes.Structure):
            _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("a", u64), ("b", u64)]

        class ProgLoadAttr(ctypes.Structure):
            _fields_ = [
                ("prog_type", u32),
                ("insn_cnt", u32),
                ("insns", u64),
                ("license", u64),
                ("log_level", u32),
                ("log_size", u32),
                ("log_buf", u64),
                ("kern_version", u32),
                ("prog_flags", u32),
                ("prog_name", ctypes.c_char * 16),
                ("prog_ifindex", u32),
                ("expected_attach_type", u32),
            ]

        class AttachAttr(ctypes.Structure):  # BPF_PROG_ATTACH and BPF_PROG_DETACH
            _fields_ = [
                ("target_fd", u32),
                ("attach_bpf_fd", u32),
                ("attach_type", u32),
                ("attach_flags", u32),
                ("replace_bpf_fd", u32),
            ]

        class QueryAttr(ctypes.Structure):
            _fields_ = [
                ("target_fd", u32),
                ("attach_type", u32),
                ("query_flags", u32),
                ("attach_flags", u32),
                ("prog_ids", u64),
                ("prog_cnt", u32),
            ]

        class GetFdByIdAttr(ctypes.Structure):
            _fields_ = [("prog_id", u32), ("next_id", u32), ("open_flags", u32)]

        self.OpenHow = OpenHow
        self.CapHeader = CapHeader
        self.CapData = CapData
        self.SockFprog = SockFprog
        self.ArgCmp = ArgCmp
        self.ProgLoadAttr = ProgLoadAttr
        self.AttachAttr = AttachAttr
        self.QueryAttr = QueryAttr
        self.GetFdByIdAttr = GetFdByIdAttr


_types: _Types | None = None


def _t() -> _Types:
    global _types
    if _types is None:
        _types = _Types()
    return _types


def _errno() -> int:
    import _ctypes

    return int(_ctypes.get_errno())


def _fail(what: str) -> OSError:
    err = _errno()
    return OSError(err, f"{what}: {posix.strerror(err)}")


def _check(ret: int, what: str) -> int:
    if ret < 0:
        raise _fail(what)
    return ret


def _b(s: str | bytes | None) -> bytes | None:
    if s is None:
        return None
    return s if isinstance(s, bytes) else s.encode()


def _nr(name: str) -> int:
    machine = posix.uname().machine
    try:
        return _SYS[machine][name]
    except KeyError:
        raise OSError(38, f"{name}: syscall number unknown on {machine}") from None  # ENOSYS


# --- namespaces ----------------------------------------------------------------

_setns_fn = None


def setns(fd: int, nstype: int = 0) -> None:
    """setns(2) through `_ctypes` itself: no `import ctypes` (see above)."""
    global _setns_fn
    if _setns_fn is None:
        import _ctypes

        class _CInt(_ctypes._SimpleCData):  # type: ignore[type-arg]
            _type_ = "i"

        class _Func(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
            _restype_ = _CInt

        class _Lib:
            _handle = _ctypes.dlopen(None, posix.RTLD_NOW)  # type: ignore[arg-type]

        _setns_fn = _Func(("setns", _Lib()))  # type: ignore[arg-type]
    if _setns_fn(fd, nstype) != 0:
        raise _fail(f"setns({fd}, {nstype:#x})")


def setns_path(path: str, nstype: int = 0) -> None:
    fd = posix.open(path, posix.O_RDONLY | posix.O_CLOEXEC)
    try:
        setns(fd, nstype)
    except OSError as exc:
        raise OSError(exc.errno, f"setns {path}: {exc.strerror}") from None
    finally:
        posix.close(fd)


def unshare(flags: int) -> None:
    import ctypes

    _check(_ct().unshare(ctypes.c_int(flags)), f"unshare({flags:#x})")


def sethostname(name: str) -> None:
    import ctypes

    raw = name.encode()
    _check(_ct().sethostname(raw, ctypes.c_size_t(len(raw))), f"sethostname({name!r})")


# --- mounts --------------------------------------------------------------------


def mount(
    source: str | None, target: str, fstype: str | None, flags: int = 0, data: str | None = None
) -> None:
    import ctypes

    ret = _ct().mount(_b(source), _b(target), _b(fstype), ctypes.c_ulong(flags), _b(data))
    _check(ret, f"mount {source!r} on {target!r} type {fstype!r} flags {flags:#x} data {data!r}")


def umount2(target: str, flags: int = 0) -> None:
    import ctypes

    _check(_ct().umount2(_b(target), ctypes.c_int(flags)), f"umount2({target!r}, {flags})")


def pivot_root(new_root: str, put_old: str) -> None:
    import ctypes

    ret = _ct().syscall(ctypes.c_long(_nr("pivot_root")), _b(new_root), _b(put_old))
    _check(ret, f"pivot_root({new_root!r}, {put_old!r})")


def openat2(dirfd: int, path: str, flags: int, resolve: int, mode: int = 0) -> int:
    """openat2(2) with `struct open_how`; OSError(ENOSYS) where the kernel
    lacks it. O_CLOEXEC is always added."""
    import ctypes

    how = _t().OpenHow(flags | posix.O_CLOEXEC, mode, resolve)
    fd = _ct().syscall(
        ctypes.c_long(SYS_OPENAT2),
        ctypes.c_int(dirfd),
        ctypes.c_char_p(path.encode(errors="surrogateescape")),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd < 0:
        raise _fail(f"openat2 {path!r}")
    return int(fd)


# --- process attributes --------------------------------------------------------


def prctl(option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0, arg5: int = 0) -> int:
    import ctypes

    ret = _ct().prctl(
        ctypes.c_int(option),
        ctypes.c_ulong(arg2),
        ctypes.c_ulong(arg3),
        ctypes.c_ulong(arg4),
        ctypes.c_ulong(arg5),
    )
    return _check(ret, f"prctl({option}, {arg2})")


def set_name(name: str) -> None:
    """The calling thread's comm (what ps -o comm and top show), max 15 bytes."""
    import ctypes

    buf = ctypes.create_string_buffer(name.encode()[:15])
    _ct().prctl(
        ctypes.c_int(PR_SET_NAME), buf, ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)
    )


_CAP_V3 = 0x20080522


def capset(effective: int, permitted: int, inheritable: int) -> None:
    import ctypes

    hdr = _t().CapHeader(_CAP_V3, 0)
    data = (_t().CapData * 2)()
    for i in range(2):
        shift = 32 * i
        data[i].effective = (effective >> shift) & 0xFFFFFFFF
        data[i].permitted = (permitted >> shift) & 0xFFFFFFFF
        data[i].inheritable = (inheritable >> shift) & 0xFFFFFFFF
    _check(_ct().capset(ctypes.byref(hdr), data), "capset")


def setgroups(groups: list[int]) -> None:
    posix.setgroups(groups)


def syscall_available(name: str) -> bool:
    return hasattr(_ct(), name)


# --- glibc malloc --------------------------------------------------------------


def release_free_memory() -> None:
    """Give the pages glibc malloc holds free (in every arena) back to the
    kernel: malloc_trim(0). Startup leaves many (imports, parsing); free()
    alone only returns the top of the heap. Nothing on other C libraries."""
    import ctypes

    trim = getattr(_ct(), "malloc_trim", None)
    if trim is not None:
        trim(ctypes.c_size_t(0))


def mallopt(param: int, value: int) -> None:
    """glibc's mallopt (e.g. M_ARENA_MAX); nothing on other C libraries."""
    import ctypes

    func = getattr(_ct(), "mallopt", None)
    if func is not None:
        func(ctypes.c_int(param), ctypes.c_int(value))


# --- seccomp -------------------------------------------------------------------


def seccomp_set_filter(bpf: bytes) -> None:
    """Install `bpf` (an array of struct sock_filter, 8 bytes each) as the
    calling process's seccomp filter: irrevocable, for a container child
    right before exec."""
    import ctypes

    if len(bpf) % 8:
        raise ValueError("seccomp program is not a whole number of instructions")

    buf = ctypes.create_string_buffer(bpf, len(bpf))
    prog = _t().SockFprog(len(bpf) // 8, ctypes.cast(buf, ctypes.c_void_p))
    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog))


# One rule: (action, syscall name, [(arg index, op, datum_a, datum_b), ...]).
SeccompRule = tuple[int, str, "Sequence[tuple[int, int, int, int]]"]

_seccomp = None


def _libseccomp() -> ctypes.CDLL:
    global _seccomp
    if _seccomp is None:
        import ctypes

        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
        lib.seccomp_init.restype = ctypes.c_void_p
        lib.seccomp_init.argtypes = [ctypes.c_uint32]
        lib.seccomp_release.argtypes = [ctypes.c_void_p]
        lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
        lib.seccomp_rule_add_array.argtypes = [
            ctypes.c_void_p,
            ctypes.c_uint32,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.POINTER(_t().ArgCmp),
        ]
        lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
        _seccomp = lib
    return _seccomp


def seccomp_compile(default_action: int, rules: Iterable[SeccompRule], out_fd: int) -> None:
    """Compile a filter for the native architecture with libseccomp and
    write its classic BPF to `out_fd` (seccomp_export_bpf). A syscall name
    libseccomp does not know is skipped; a rule that is already there (EEXIST)
    is no error. Loads nothing into this process."""
    lib = _libseccomp()
    ctx = lib.seccomp_init(default_action)
    if not ctx:
        raise _fail("seccomp_init")
    try:
        for action, name, args in rules:
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            if nr < 0:
                continue
            arr = (_t().ArgCmp * max(1, len(args)))()
            for i, (index, op, a, b) in enumerate(args):
                arr[i] = _t().ArgCmp(index, op, a, b)
            ret = lib.seccomp_rule_add_array(ctx, action, nr, len(args), arr)
            if ret < 0 and ret != -17:  # EEXIST
                raise OSError(-ret, f"seccomp rule for {name}: {posix.strerror(-ret)}")
        ret = lib.seccomp_export_bpf(ctx, out_fd)
        if ret < 0:
            raise OSError(-ret, f"seccomp_export_bpf: {posix.strerror(-ret)}")
    finally:
        lib.seccomp_release(ctx)


# --- bpf(2), as libbpf's low-level calls ----------------------------------------

BPF_PROG_LOAD = 5
BPF_PROG_ATTACH = 8
BPF_PROG_DETACH = 9
BPF_PROG_GET_FD_BY_ID = 13
BPF_PROG_QUERY = 16


class BpfLoadError(OSError):
    """The kernel refused a program; `log` is the verifier's text (when a
    log was asked for)."""

    def __init__(self, err: int, message: str, log: str = "") -> None:
        super().__init__(err, message)
        self.log = log


def _bpf(cmd: int, attr: ctypes.Structure, what: str) -> int:
    import ctypes

    ret: int = _ct().syscall(
        ctypes.c_long(_nr("bpf")),
        ctypes.c_int(cmd),
        ctypes.byref(attr),
        ctypes.c_uint(ctypes.sizeof(attr)),
    )
    if ret < 0:
        raise _fail(what)
    return ret


def bpf_prog_load(
    prog_type: int,
    insns: bytes,
    license: bytes,
    name: bytes = b"",
    expected_attach_type: int = 0,
    log_size: int = 0,
) -> int:
    """BPF_PROG_LOAD: the program's fd (the caller closes it). With
    `log_size`, a refusal raises BpfLoadError carrying the verifier's log."""
    import ctypes

    code = ctypes.create_string_buffer(insns)
    lic = ctypes.create_string_buffer(license)
    attr = _t().ProgLoadAttr()
    attr.prog_type = prog_type
    attr.insn_cnt = len(insns) // 8
    attr.insns = ctypes.addressof(code)
    attr.license = ctypes.addressof(lic)
    attr.prog_name = name[:15]
    attr.expected_attach_type = expected_attach_type
    log = ctypes.create_string_buffer(log_size) if log_size else None
    if log is not None:
        attr.log_level = 1
        attr.log_size = log_size
        attr.log_buf = ctypes.addressof(log)
    try:
        return _bpf(BPF_PROG_LOAD, attr, f"load program ({len(insns) // 8} instructions)")
    except OSError as exc:
        text = log.value.decode(errors="replace").strip() if log is not None else ""
        raise BpfLoadError(exc.errno or 22, exc.strerror or "", text) from None


def bpf_prog_attach(target_fd: int, prog_fd: int, attach_type: int, flags: int) -> None:
    attr = _t().AttachAttr(target_fd, prog_fd, attach_type, flags, 0)
    _bpf(BPF_PROG_ATTACH, attr, f"attach program (flags {flags:#x})")


def bpf_prog_detach(target_fd: int, prog_fd: int, attach_type: int) -> None:
    attr = _t().AttachAttr(target_fd, prog_fd, attach_type, 0, 0)
    _bpf(BPF_PROG_DETACH, attr, "detach program")


def bpf_prog_query(target_fd: int, attach_type: int, max_progs: int) -> tuple[list[int], int]:
    """BPF_PROG_QUERY: the ids of the programs attached directly to the
    target and the flags they were attached with."""
    import ctypes

    ids = (ctypes.c_uint32 * max_progs)()
    attr = _t().QueryAttr()
    attr.target_fd = target_fd
    attr.attach_type = attach_type
    attr.prog_ids = ctypes.addressof(ids)
    attr.prog_cnt = max_progs
    _bpf(BPF_PROG_QUERY, attr, "query programs")
    return list(ids[: attr.prog_cnt]), int(attr.attach_flags)


def bpf_prog_get_fd_by_id(prog_id: int) -> int:
    return _bpf(
        BPF_PROG_GET_FD_BY_ID, _t().GetFdByIdAttr(prog_id, 0, 0), f"open program id {prog_id}"
    )
