"""Which kubectl a test runs: by its versioned path, never the dispatcher at
/usr/bin/kubectl (it picks an older kubectl to match the server's reported
version, which once hid that kubectl 1.32+ sends protobuf bodies)."""

from __future__ import annotations

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


# The newest kubectl on this machine (tests skip with a reason where it is absent).
NEWEST = _newest()
OLDEST = versioned(OLDEST_MINOR)
