"""`skiff user create NAME [--group G ...]`: a credential for a user.

Run on a control-plane host (it reads `<data-dir>/pki/token-secret` and
`ca.crt`, as kubeadm's user kubeconfigs need the cluster CA key): writes a
standard kubeconfig (0600), as `kubeadm kubeconfig user` does, that kubectl
and skiffctl both read: the cluster (the API's https address, its CA
inline, skiff's gRPC address as an extension), the user NAME with a token
that carries the name and groups, signed by the cluster's token secret, and
a context joining them. What the user may do is RBAC's business: bind roles
to the user or its groups (the group system:masters makes an admin). The
server is that of `<data-dir>/admin.conf`, or --server.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from controlplane.apiserver.auth import TokenAuthority
from controlplane.client.config import ConfigError, load_config
from controlplane.client.kubeconfig import write_kubeconfig

DEFAULT_DATA_DIR = "/var/lib/skiff/controlplane"
RESERVED = ("system:node:", "system:serviceaccount:")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="skiff user", description=__doc__)
    sub = p.add_subparsers(dest="action", required=True)
    create = sub.add_parser("create", help="write a credential file for a user")
    create.add_argument("name", help="the user name")
    create.add_argument("--group", action="append", default=[], help="a group (repeatable)")
    create.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help="the control plane's")
    create.add_argument("--server", default="", help="HOST:PORT (default: from admin.conf)")
    create.add_argument("-o", "--output", default="", help="file to write (default NAME.conf)")
    return p


def create(name: str, groups: Sequence[str], data_dir: Path, server: str, out: Path) -> Path:
    if not name or name.startswith(RESERVED) or any(c.isspace() for c in name):
        raise ConfigError(f"user name {name!r}: must be non-empty, without spaces, and not "
                          f"start with {' or '.join(RESERVED)}")  # fmt: skip
    pki = data_dir / "pki"
    try:
        secret = (pki / "token-secret").read_bytes().strip()
        ca_pem = (pki / "ca.crt").read_bytes()
    except OSError as err:
        raise ConfigError(f"cannot read the cluster's keys under {pki}: {err}") from err
    grpc = ""
    if not server:
        admin = load_config(data_dir / "admin.conf")
        server, grpc = admin.server, admin.grpc_server
    token = TokenAuthority(secret).user_token(name, tuple(groups))
    write_kubeconfig(out, server, ca_pem, token, grpc, user=name)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    out = Path(args.output or f"{args.name}.conf")
    try:
        create(args.name, args.group, Path(args.data_dir), args.server, out)
    except (ConfigError, ValueError) as err:
        print(f"skiff user: {err}", file=sys.stderr)
        return 1
    groups = ", ".join(args.group) or "no groups"
    print(f"wrote {out} for user {args.name} ({groups}); bind roles to grant permissions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
