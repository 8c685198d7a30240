"""The node-local address the DNS responder listens on (e.g. 10.43.0.10).

Pods send their DNS queries to one well-known service IP. Every node answers
them itself, as NodeLocal DNSCache does: the IP sits on a dummy interface
(`skiff-dns`) so that packets to it are delivered locally, and the service
proxy is told to leave it alone (`ProxySettings.local_service_ips`).
Kernels without the dummy driver get the address on `lo` instead.
`ensure_local_address` is idempotent; `remove_local_address` succeeds when
nothing is there. Both run the `ip` binary (optionally behind a prefix such
as `ip netns exec NAME`, as tests do) and touch no other interface.
"""

from __future__ import annotations

import ipaddress
import subprocess
from collections.abc import Sequence

DEFAULT_IFNAME = "skiff-dns"


class LocalAddressError(RuntimeError):
    pass


def _ip(prefix: Sequence[str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [*prefix, "ip", *args], capture_output=True, text=True, timeout=30, check=False
    )
    if check and proc.returncode != 0:
        raise LocalAddressError(f"ip {' '.join(args)}: {proc.stderr.strip()}")
    return proc


def _plen(ip: str) -> int:
    return 32 if ipaddress.ip_address(ip).version == 4 else 128


def ensure_local_address(ip: str, ifname: str = DEFAULT_IFNAME, prefix: Sequence[str] = ()) -> str:
    """Put `ip` on the dummy interface `ifname` (created if missing); on a
    kernel without the dummy driver, on `lo`. Returns the device used."""
    plen = _plen(ip)
    device = ifname
    if _ip(prefix, "link", "show", "dev", ifname, check=False).returncode != 0:
        made = _ip(prefix, "link", "add", ifname, "type", "dummy", check=False)
        if made.returncode != 0:
            if "Unknown device type" not in made.stderr:
                raise LocalAddressError(f"ip link add {ifname} type dummy: {made.stderr.strip()}")
            device = "lo"  # no dummy driver: any local device delivers locally
    _ip(prefix, "addr", "replace", f"{ip}/{plen}", "dev", device)
    _ip(prefix, "link", "set", device, "up")
    return device


def remove_local_address(ip: str, ifname: str = DEFAULT_IFNAME, prefix: Sequence[str] = ()) -> bool:
    """Delete the dummy interface (and so its address), or the address from
    `lo`; True if anything was there."""
    found = False
    if _ip(prefix, "link", "show", "dev", ifname, check=False).returncode == 0:
        _ip(prefix, "link", "del", ifname)
        found = True
    on_lo = _ip(prefix, "-o", "addr", "show", "dev", "lo", "to", f"{ip}/{_plen(ip)}")
    if on_lo.stdout.strip():
        _ip(prefix, "addr", "del", f"{ip}/{_plen(ip)}", "dev", "lo")
        found = True
    return found
