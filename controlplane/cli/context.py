"""What every skiffctl verb gets: parsed flags, a lazily made client, streams, time.

`Context.client` connects on first use through the injected factory (the
real one reads the credential file and dials the API server; tests pass a
fake), so verbs that fail on bad arguments never touch the network.
`CliError` is the one way a verb reports a user-facing failure: main prints
`error: <message>` and exits with its code.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from controlplane.client.interface import ApiClient
from machinery.clock import Clock, RealClock

ClientFactory = Callable[[argparse.Namespace], ApiClient]


class CliError(Exception):
    """A failure to report as `error: <message>` with exit code `code`."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Context:
    args: argparse.Namespace
    factory: ClientFactory
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)
    stdin: TextIO = field(default_factory=lambda: sys.stdin)
    clock: Clock = field(default_factory=RealClock)
    _client: ApiClient | None = None

    @property
    def client(self) -> ApiClient:
        if self._client is None:
            self._client = self.factory(self.args)
        return self._client

    def out(self, text: str = "") -> None:
        self.stdout.write(text if text.endswith("\n") else text + "\n")
        self.stdout.flush()

    def err(self, text: str) -> None:
        self.stderr.write(text if text.endswith("\n") else text + "\n")
        self.stderr.flush()

    @property
    def namespace(self) -> str:
        """The namespace flag, or "default"."""
        ns = getattr(self.args, "namespace", None)
        return str(ns) if ns else "default"

    @property
    def all_namespaces(self) -> bool:
        return bool(getattr(self.args, "all_namespaces", False))

    def now(self) -> float:
        return self.clock.now()
