"""The thin layer that runs iptables for the service proxy.

`Iptables` is the boundary the proxy talks to: read a table
(`iptables-save -t`), apply one transaction (`iptables-restore --noflush`,
atomic per table), set a sysctl. `CommandIptables` runs the binaries, optionally
behind a command prefix such as `ip netns exec NAME` (tests run it inside a
namespace of their own; the agent runs it with no prefix); the unit tests'
stand-in is `tests.fakes.iptables.FakeIptables`. This module never decides what the rules
are (see rules.py) and never flushes a table or a chain it was not told to.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from typing import Protocol

_SEARCH = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")


class IptablesError(RuntimeError):
    """An iptables command failed; the message carries its stderr."""


class Iptables(Protocol):
    def save(self, table: str) -> str: ...

    def restore(self, text: str) -> None:
        """Apply `text` with --noflush, atomically per table."""
        ...

    def sysctl(self, key: str, value: str) -> None:
        """Set `net/ipv4/...`-style key (slashes) to `value`."""
        ...

    def delete_conntrack(self, filters: Sequence[str]) -> None:
        """`conntrack -D <filters>`; no matching entry is not an error."""
        ...


def find_binary(name: str) -> str:
    for d in os.environ.get("PATH", "").split(":") + list(_SEARCH):
        if d and os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    raise IptablesError(f"{name} not found in PATH or {', '.join(_SEARCH)}")


def run_tool(
    name: str,
    argv: Sequence[str],
    error: type[Exception],
    prefix: Sequence[str] = (),
    stdin: str | None = None,
    timeout: float = 30.0,
) -> subprocess.CompletedProcess[str]:
    """Run `argv` behind `prefix` (`ip netns exec <ns>`), text captured; a
    tool that cannot start or does not end in `timeout` raises `error`
    ("<name>: <why>"). The exit status is the caller's to judge."""
    try:
        return subprocess.run(
            [*prefix, *argv],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise error(f"{name}: {err}") from err


class CommandIptables:
    """iptables-save / iptables-restore / sysctl, run as subprocesses."""

    def __init__(
        self,
        prefix: Sequence[str] = (),
        save_binary: str = "iptables-save",
        restore_binary: str = "iptables-restore",
        timeout: float = 30.0,
    ) -> None:
        self.prefix = list(prefix)
        self.save_binary = save_binary
        self.restore_binary = restore_binary
        self.timeout = timeout

    def _run(self, argv: list[str], stdin: str | None = None) -> str:
        if not os.path.isabs(argv[0]):
            argv = [find_binary(argv[0]), *argv[1:]]
        proc = run_tool(argv[0], argv, IptablesError, self.prefix, stdin, self.timeout)
        if proc.returncode != 0:
            raise IptablesError(f"{argv[0]} failed ({proc.returncode}): {proc.stderr.strip()}")
        return proc.stdout

    def save(self, table: str) -> str:
        return self._run([self.save_binary, "-t", table])

    def restore(self, text: str) -> None:
        self._run([self.restore_binary, "--noflush", "--wait"], stdin=text)

    def sysctl(self, key: str, value: str) -> None:
        if self.prefix:
            # `ip netns exec` remounts /sys, and /proc/sys/net follows the netns.
            self._run(["sysctl", "-q", "-w", f"{key.replace('/', '.')}={value}"])
            return
        try:
            with open(f"/proc/sys/{key}", "w") as f:
                f.write(value)
        except OSError as err:
            raise IptablesError(f"sysctl {key}: {err}") from err

    def delete_conntrack(self, filters: Sequence[str]) -> None:
        argv = [find_binary("conntrack"), "-D", *filters]
        proc = run_tool("conntrack", argv, IptablesError, self.prefix, timeout=self.timeout)
        # conntrack exits 1 when nothing matched ("0 flow entries have been deleted").
        if proc.returncode not in (0, 1) or (
            proc.returncode == 1 and "flow entries have been deleted" not in proc.stderr
        ):
            raise IptablesError(f"conntrack -D failed ({proc.returncode}): {proc.stderr.strip()}")
