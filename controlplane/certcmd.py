"""`skiff certificate rotate [--service NAME]` and `skiff certificate check` (k3s' commands).

`rotate` re-issues the leaf certificates of the named services (default:
all) under `<data-dir>/pki`, keeping their names (SANs) and the CA: a
running control plane serves the new certificate from its next TLS
handshake on, and clients, which trust the CA, go on without a restart.
k3s' service names where they map: `api-server` (the serving certificate
and the API server's client certificate towards agents). Agents' serving
certificates are their own (issued at join, one year, renewed by each
agent through the CertificateSigningRequest API: agent/serving_certificate.py).
`check` lists each certificate with its expiry.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections.abc import Sequence
from pathlib import Path

from controlplane.apiserver.tls import (
    ROTATE_WITHIN,
    SERVICES,
    certificate_addresses,
    ensure_pki,
    expirations,
    rotate,
)
from machinery import rfc3339

DEFAULT_DATA_DIR = "/var/lib/skiff/controlplane"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="skiff certificate", description=__doc__)
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in (("rotate", "re-issue certificates now"), ("check", "list expiries")):
        s = sub.add_parser(name, help=text)
        s.add_argument(
            "--data-dir", default=DEFAULT_DATA_DIR, help="the control plane's state directory"
        )
        s.add_argument("--service", "-s", action="append", default=[], choices=sorted(SERVICES),
                       help="a service whose certificates to rotate (repeatable; default all)")  # fmt: skip
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    data_dir = Path(args.data_dir)
    if not (data_dir / "pki" / "ca.key").exists():
        print(f"skiff certificate: no cluster CA in {data_dir / 'pki'}", file=sys.stderr)
        return 1
    if args.action == "check":
        now = datetime.datetime.now(datetime.UTC).timestamp()
        for name, expiry in expirations(data_dir).items():
            left = expiry - now
            state = "EXPIRED" if left <= 0 else (
                "RENEW" if left <= ROTATE_WITHIN.total_seconds() else "OK")  # fmt: skip
            when = rfc3339.format_time(expiry)
            print(f"{name}\t{when}\t{int(left // 86400)}d\t{state}")
        return 0
    server = data_dir / "pki" / "server.crt"
    dns, ips = certificate_addresses(server.read_bytes()) if server.exists() else (set(), set())
    removed = rotate(data_dir, args.service or None)
    ensure_pki(data_dir, sorted(dns | ips))
    for name in removed:
        print(f"certificate {name} rotated")
    return 0
