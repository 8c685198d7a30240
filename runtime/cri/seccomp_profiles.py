"""Seccomp profiles -> classic BPF bytes for the monitor to load.

`runtime/default` is containerd's default profile, an allow-list (with
extras allowed when the matching capability is granted:
runtime.linux.seccomp_default); `localhost/<path>` is an OCI/Docker JSON
profile read from inside the profile root (--seccomp-profile-root, the
kubelet's seccomp directory): a relative path is taken from there, an
absolute one must lie there, and no symlink leads out.
Filters are built with libseccomp through `runtime.linux.seccomp`; nothing is
loaded here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from runtime import errors
from runtime.linux import safepath, seccomp

MAX_PROFILE_BYTES = 1 << 20


def read_localhost(root: Path, ref: str) -> bytes:
    """The profile `ref` names, read from inside `root`."""
    path = Path(ref)
    if path.is_absolute():
        try:
            rel = path.relative_to(root)
        except ValueError:
            raise errors.InvalidArgument(
                f"seccomp profile {ref!r} is outside the profile root {str(root)!r}"
            ) from None
    else:
        rel = path
    if ".." in rel.parts:
        raise errors.InvalidArgument(f"seccomp profile {ref!r} must not contain '..'")
    try:
        root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fd = safepath.open_in_root(root_fd, str(rel))
        finally:
            os.close(root_fd)
        try:
            with open(safepath.proc_path(fd), "rb") as f:
                return f.read(MAX_PROFILE_BYTES + 1)[: MAX_PROFILE_BYTES + 1]
        finally:
            os.close(fd)
    except OSError as exc:
        raise errors.InvalidArgument(
            f"cannot load seccomp profile {ref!r} from {str(root)!r}: {exc.strerror}"
        ) from None


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
