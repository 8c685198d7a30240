"""The plugin's OS layer: entering a network namespace (`setns` from
machinery.libc, which loads no ctypes for it), running a helper executable
with pipes via `posix_spawn`, per-namespace sysctls, and the few
`os`/`os.path` helpers the plugin needs, on top of `posix` (importing `os`
costs ~2 ms, a tenth of an ADD).

The plugin is its own short-lived, single-threaded executable and must start
cheaply: it imports nothing of the runtime outside runtime/cni, and of the
floor only the modules that load nothing heavy (machinery.libc,
machinery.atomicfile). Switching namespaces here is safe only because the
plugin process has exactly one thread; never import this module into a
long-lived, multi-threaded process (the CNI client runs the plugin as a
subprocess instead).
"""

from __future__ import annotations

import posix

from machinery import libc

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

CLONE_NEWNET = libc.CLONE_NEWNET
_S_IFMT, _S_IFDIR, _S_IFREG = 0o170000, 0o040000, 0o100000

# `os` costs ~2 ms to import on a loaded machine (collections.abc, posixpath);
# the plugin uses `posix` and these few helpers instead.
_environ: dict[str, str] | None = None


def environ() -> dict[str, str]:
    """A copy of the process environment as str -> str."""
    global _environ
    if _environ is None:
        _environ = {
            k.decode(errors="surrogateescape"): v.decode(errors="surrogateescape")
            for k, v in posix.environ.items()
        }
    return dict(_environ)


def join(*parts: str) -> str:
    out = parts[0]
    for p in parts[1:]:
        out = p if p.startswith("/") else (out.rstrip("/") + "/" + p if out else p)
    return out


def _mode(path: str) -> int:
    try:
        return posix.stat(path).st_mode & _S_IFMT
    except OSError:
        return 0


def isdir(path: str) -> bool:
    return _mode(path) == _S_IFDIR


def is_executable_file(path: str) -> bool:
    return _mode(path) == _S_IFREG and posix.access(path, posix.X_OK)


def makedirs(path: str, mode: int = 0o755) -> None:
    """mkdir -p."""
    if isdir(path):
        return
    parent = path.rstrip("/").rpartition("/")[0]
    if parent and not isdir(parent):
        makedirs(parent, mode)
    try:
        posix.mkdir(path, mode)
    except FileExistsError:
        pass


def digest(text: str, length: int) -> str:
    """Hex SHA-256 prefix of `text` (via `_sha256`: `hashlib` costs ~5 ms)."""
    import _sha256  # type: ignore[import-not-found]

    return str(_sha256.sha256(text.encode()).hexdigest())[:length]


class NetNS:
    """Enter a network namespace for the duration of a `with` block.

    Sockets created inside stay bound to that namespace after the block, which
    is how the plugin talks netlink to the pod's namespace from outside it.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = posix.open(path, posix.O_RDONLY | posix.O_CLOEXEC)
        self._home = -1

    def close(self) -> None:
        if self._fd >= 0:
            posix.close(self._fd)
            self._fd = -1

    def __enter__(self) -> NetNS:
        self._home = posix.open("/proc/thread-self/ns/net", posix.O_RDONLY | posix.O_CLOEXEC)
        try:
            libc.setns(self._fd, CLONE_NEWNET)
        except BaseException:
            posix.close(self._home)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            libc.setns(self._home, CLONE_NEWNET)
        finally:
            posix.close(self._home)

    def fileno(self) -> int:
        return self._fd


def is_netns(path: str) -> bool:
    """True when `path` is a namespace file (nsfs)."""
    try:
        fd = posix.open(path, posix.O_RDONLY | posix.O_CLOEXEC)
    except OSError:
        return False
    try:
        return is_netns_fd(fd)
    finally:
        posix.close(fd)


def is_netns_fd(fd: int) -> bool:
    """Namespace files all live on the one nsfs device."""
    return posix.fstat(fd).st_dev == posix.stat("/proc/self/ns/net").st_dev


def write_sysctl(path: str, value: str) -> None:
    """Set a sysctl, given as its path under /proc/sys (`net/ipv4/ip_forward`:
    slashes, because interface names may contain dots), in the current
    network namespace."""
    with open("/proc/sys/" + path, "w") as f:
        f.write(value)


def read_sysctl(path: str) -> str:
    with open("/proc/sys/" + path) as f:
        return f.read().strip()


class Proc:
    """A started helper: stdin already written; `wait()` collects it."""

    def __init__(self, pid: int, out_r: int, err_r: int) -> None:
        self.pid = pid
        self._out = out_r
        self._err = err_r
        self.result: tuple[int, bytes, bytes] | None = None

    def wait(self) -> tuple[int, bytes, bytes]:
        if self.result is None:
            try:
                out, err = _read_all_two(self._out, self._err)
            finally:
                posix.close(self._out)
                posix.close(self._err)
            _, status = posix.waitpid(self.pid, 0)
            self.result = (posix.waitstatus_to_exitcode(status), out, err)
        return self.result


def start(argv: list[str], stdin: bytes = b"", env: Mapping[str, str] | None = None) -> Proc:
    """Start an executable with `stdin` written to it (must fit the pipe
    buffer, 64 KiB; CNI configs and rule sets do) so the caller can do other
    work while it runs. A minimal `subprocess` (which costs ~10 ms to import)
    on posix_spawn and three pipes."""
    if len(stdin) > 65536:
        raise ValueError("stdin larger than a pipe buffer")
    in_r, in_w = posix.pipe()
    out_r, out_w = posix.pipe()
    err_r, err_w = posix.pipe()
    actions = [
        (posix.POSIX_SPAWN_DUP2, in_r, 0),
        (posix.POSIX_SPAWN_DUP2, out_w, 1),
        (posix.POSIX_SPAWN_DUP2, err_w, 2),
    ]
    try:
        pid = posix.posix_spawn(
            argv[0], argv, environ() if env is None else dict(env), file_actions=actions
        )
    except BaseException:
        for fd in (in_w, out_r, err_r):
            posix.close(fd)
        raise
    finally:
        for fd in (in_r, out_w, err_w):
            posix.close(fd)
    try:
        if stdin:
            posix.write(in_w, stdin)
    except BrokenPipeError:
        pass
    finally:
        posix.close(in_w)
    return Proc(pid, out_r, err_r)


def run(
    argv: list[str], stdin: bytes = b"", env: Mapping[str, str] | None = None
) -> tuple[int, bytes, bytes]:
    """Run an executable to completion: (exit status, stdout, stderr)."""
    return start(argv, stdin, env).wait()


def _read_all_two(a: int, b: int) -> tuple[bytes, bytes]:
    """stdout to EOF, then stderr (helpers write little to stderr, so this
    does not deadlock; it saves importing `select`)."""
    out = []
    for fd in (a, b):
        chunks = []
        while chunk := posix.read(fd, 65536):
            chunks.append(chunk)
        out.append(b"".join(chunks))
    return out[0], out[1]
