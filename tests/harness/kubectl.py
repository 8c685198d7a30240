"""Which kubectl a test runs: by its versioned path, never the dispatcher at
/usr/bin/kubectl (it picks an older kubectl to match the server's reported
version, which once hid that kubectl 1.32+ sends protobuf bodies)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

BIN = Path("/usr/lib/google-cloud-sdk/bin")
OLDEST_MINOR = 27


def installed_minors() -> list[int]:
    """The kubectl 1.N installed at BIN, oldest first."""
    found = {int(p.name.rsplit(".", 1)[1]) for p in BIN.glob("kubectl.1.*")
             if p.name.rsplit(".", 1)[1].isdigit()}  # fmt: skip
    return sorted(found)


def versioned(minor: int) -> Path:
    return BIN / f"kubectl.1.{minor}"


def _newest() -> Path:
    minors = installed_minors()
    return versioned(minors[-1] if minors else 33)


# The Go runtime's settings for a kubectl a test runs (add them to its
# environment; never to a daemon's, such as containerd's or etcd's): a call
# lives a fraction of a second and allocates a few tens of MB, so garbage
# collection is CPU spent on memory the exit frees anyway, a fifth of a
# call's CPU (0.10 -> 0.08 CPU s a `get`, 0.24 -> 0.19 an `apply`, medians
# of 4 interleaved rounds). The limit collects as usual only near 512 MiB.
GO_ENV = {"GOGC": "off", "GOMEMLIMIT": "512MiB"}


# The newest kubectl on this machine (tests skip with a reason where it is absent).
NEWEST = _newest()
OLDEST = versioned(OLDEST_MINOR)


# kubectl 1.30 to 1.33 run exec over WebSocket with a client-go that starts
# reading before it has made its streams (kubernetes/kubernetes#131189, fixed
# in client-go by #131203 for 1.34): a message that arrives first, the whole
# output of a quick command on a loaded machine, is dropped with this line on
# stderr, and kubectl still exits with the command's code. The server cannot
# tell when the client is ready (v5 has no such signal), so the one safe
# answer is the client's: a read-only command is run again.
DISCARDED = "Unknown stream id"


def read_exec(
    run: Callable[[], subprocess.CompletedProcess[str]], attempts: int = 3
) -> subprocess.CompletedProcess[str]:
    """`run` (a read-only `kubectl exec`) again while kubectl says it dropped
    a message, at most `attempts` times in all; any other outcome, an empty
    output too, is returned as it is."""
    for _ in range(attempts):
        res = run()
        if DISCARDED not in res.stderr:
            return res
    raise AssertionError(f"kubectl dropped output {attempts} times: {res.stderr.strip()}")
