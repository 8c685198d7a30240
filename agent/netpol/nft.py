"""The thin layer that runs nft for the NetworkPolicy enforcer.

`Nft` is the boundary: apply one transaction (`nft -f -`, atomic), remove a
table, tell whether a table exists. `CommandNft` runs the binary,
optionally behind a command prefix such as `nsenter --net=...` (tests run
it inside a namespace of their own); the unit tests' stand-in is
`tests.fakes.nft.FakeNft`. This module never decides what the rules are
and never touches a table it is not named.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from typing import Protocol

from agent.proxy.iptables import find_binary, run_tool


class NftError(RuntimeError):
    """nft failed; the message carries its stderr."""


class Nft(Protocol):
    def apply(self, text: str) -> None:
        """Run `text` as one nft transaction."""
        ...

    def delete_table(self, family: str, name: str) -> bool:
        """Remove the table; False when it was not there."""
        ...

    def has_table(self, family: str, name: str) -> bool: ...


class CommandNft:
    def __init__(self, prefix: Sequence[str] = (), timeout: float = 60.0) -> None:
        self.prefix = list(prefix)
        self.timeout = timeout

    def _run(self, args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        argv = [find_binary("nft"), *args]
        return run_tool("nft", argv, NftError, self.prefix, stdin, self.timeout)

    def apply(self, text: str) -> None:
        proc = self._run(["-f", "-"], stdin=text)
        if proc.returncode != 0:
            raise NftError(f"nft -f failed ({proc.returncode}): {proc.stderr.strip()[:2000]}")

    def has_table(self, family: str, name: str) -> bool:
        return self._run(["-t", "list", "table", family, name]).returncode == 0

    def delete_table(self, family: str, name: str) -> bool:
        if not self.has_table(family, name):
            return False
        proc = self._run(["delete", "table", family, name])
        if proc.returncode != 0:
            raise NftError(f"nft delete table {family} {name}: {proc.stderr.strip()}")
        return True
