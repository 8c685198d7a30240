"""Seccomp profiles -> classic BPF bytes for the monitor to load.

`runtime/default` is a default-allow filter that refuses the syscalls
Docker's default profile refuses (with extras allowed when the matching
capability is granted); `localhost/<path>` is an OCI/Docker JSON profile.
Filters are built with libseccomp through `runtime.linux.seccomp`; nothing is
loaded here.
"""

from __future__ import annotations

import json
from pathlib import Path

from runtime import errors
from runtime.linux import seccomp


def compile_profile(profile: str, caps: list[str]) -> bytes:
    if profile == "runtime/default":
        return seccomp.build(seccomp.default_profile(caps), caps)
    if profile.startswith("localhost/"):
        path = Path(profile.removeprefix("localhost/"))
        if not path.is_absolute():
            raise errors.InvalidArgument(f"seccomp profile path {str(path)!r} must be absolute")
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise errors.InvalidArgument(
                f"cannot load seccomp profile {str(path)!r}: {exc}"
            ) from None
        try:
            return seccomp.build(doc, caps)
        except (ValueError, OSError) as exc:
            raise errors.InvalidArgument(f"bad seccomp profile {str(path)!r}: {exc}") from None
    raise errors.InvalidArgument(f"unsupported seccomp profile {profile!r}")
