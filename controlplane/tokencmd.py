"""`skiff token create|list|delete`: manage bootstrap tokens (kubeadm token's job).

Talks to the API with an admin credential (--config, $SKIFF_CONFIG or the
usual lookup), storing each token as its Secret in kube-system (layout in
controlplane/api/bootstraptoken.py). `create` prints the new token, which
`skiff agent --token` exchanges for the credential of one new node; `delete`
revokes a token and touches nothing else (nodes that joined with it keep
their own credentials).
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections.abc import Sequence

from controlplane.api import bootstraptoken as bt
from controlplane.cli.context import CliError
from controlplane.cli.wait import parse_duration
from controlplane.client.apiclient import connect
from controlplane.client.config import ConfigError, load_config
from controlplane.client.errors import ApiError, NotFound


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="skiff token", description=__doc__)
    p.add_argument("--config", help="admin credential file")
    sub = p.add_subparsers(dest="action", required=True)
    create = sub.add_parser("create", help="create a bootstrap token and print it")
    create.add_argument("token", nargs="?", default="", help="the token (default: random)")
    create.add_argument("--ttl", default="24h", help="lifetime, e.g. 24h, 30m; 0: never expires")
    create.add_argument("--description", default="")
    sub.add_parser("list", help="list bootstrap tokens (ids only, never secrets)")
    delete = sub.add_parser("delete", help="revoke bootstrap tokens")
    delete.add_argument("tokens", nargs="+", help="token ids (or whole tokens)")
    return p


def _ttl(text: str) -> datetime.timedelta | None:
    try:
        seconds = parse_duration(text)
    except CliError as err:
        raise CliError(f"--ttl: {text!r} is not a duration (e.g. 24h, 30m, 0)") from err
    return datetime.timedelta(seconds=seconds) if seconds > 0 else None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        config = load_config(args.config)
        with connect(config) as api:
            now = datetime.datetime.now(datetime.UTC)
            if args.action == "create":
                token = args.token or bt.generate()
                api.create(
                    "Secret",
                    bt.token_secret(token, now, _ttl(args.ttl), args.description),
                    bt.NAMESPACE,
                )
                print(token)
            elif args.action == "list":
                print(f"{'TOKEN-ID':<10} {'EXPIRES':<22} {'USAGES':<28} DESCRIPTION")
                for item in api.list("Secret", bt.NAMESPACE).items:
                    info = bt.info(item)
                    if info is None:
                        continue
                    expires = info.expiration or "<never>"
                    if bt.expired(info.expiration, now):
                        expires += " (expired)"
                    usages = ",".join(info.usages) or "<none>"
                    print(f"{info.token_id:<10} {expires:<22} {usages:<28} {info.description}")
            else:
                for given in args.tokens:
                    token_id = bt.token_id_of(given)
                    try:
                        api.delete("Secret", bt.secret_name(token_id), bt.NAMESPACE)
                    except NotFound as err:
                        raise CliError(f"bootstrap token {token_id!r} not found") from err
                    print(f"bootstrap token {token_id} deleted")
    except (CliError, ConfigError, ApiError) as err:
        print(f"skiff token: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
