"""Seccomp profiles -> classic BPF bytes for the monitor to load.

`runtime/default` is containerd's default profile, an allow-list (with
extras allowed when the matching capability is granted:
runtime.linux.seccomp_default); `localhost/<path>` is an OCI/Docker JSON
profile. An absolute path is loaded as given, as containerd does: CRI's
localhost_ref is chosen by the trusted kubelet, and the agent confines a pod's
`localhostProfile` to its seccomp root (agent.pod_config.localhost_profile).
A relative path is taken from inside the profile root (--seccomp-profile-root),
never through `..` or a symlink out.
Filters are built with libseccomp through `runtime.linux.seccomp`; nothing is
loaded here.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

from runtime import errors
from runtime.linux import safepath, seccomp

MAX_PROFILE_BYTES = 1 << 20


def read_localhost(root: Path, ref: str) -> bytes:
    """The profile `ref` names: an absolute path as given, a relative one from
    inside `root`. At most MAX_PROFILE_BYTES + 1 bytes are read."""
    path = Path(ref)
    if not path.is_absolute() and ".." in path.parts:
        raise errors.InvalidArgument(f"seccomp profile {ref!r} must not contain '..'")
    try:
        if path.is_absolute():
            return _read_bounded(str(path))
        root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fd = safepath.open_in_root(root_fd, str(path))
        finally:
            os.close(root_fd)
        try:
            return _read_bounded(safepath.proc_path(fd))
        finally:
            os.close(fd)
    except OSError as exc:
        where = "" if path.is_absolute() else f" from {str(root)!r}"
        raise errors.InvalidArgument(
            f"cannot load seccomp profile {ref!r}{where}: {exc.strerror}"
        ) from None


def _read_bounded(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(MAX_PROFILE_BYTES + 1)
    finally:
        os.close(fd)


def compile_profile(profile: str, caps: list[str], root: Path) -> bytes:
    if profile == "runtime/default":
        return seccomp.build(seccomp.default_profile(caps), caps)
    if profile.startswith("localhost/"):
        path = Path(profile.removeprefix("localhost/"))
        data = read_localhost(root, str(path))
        if len(data) > MAX_PROFILE_BYTES:
            raise errors.InvalidArgument(f"seccomp profile {str(path)!r} is too large")
        try:
            doc = json.loads(data)
        except ValueError as exc:
            raise errors.InvalidArgument(
                f"cannot load seccomp profile {str(path)!r}: {exc}"
            ) from None
        try:
            return seccomp.build(doc, caps)
        except (ValueError, OSError) as exc:
            raise errors.InvalidArgument(f"bad seccomp profile {str(path)!r}: {exc}") from None
    raise errors.InvalidArgument(f"unsupported seccomp profile {profile!r}")
