"""skiffctl auth can-i VERB RESOURCE [NAME] and auth whoami.

`can-i` asks the API server with a SelfSubjectAccessReview, as `kubectl
auth can-i` does: RESOURCE is a kind or plural (`pods`, `deployments.apps`),
optionally with a subresource (`pods/log`) or a name (`pods/web`), or a
non-resource path (`/healthz`). Prints `yes` (exit 0) or `no` (exit 1);
-n NS asks about a namespace (default: default), -A about all of them.
`whoami` prints the user the credential authenticates as.
"""

from __future__ import annotations

import argparse

from controlplane.api import kinds
from controlplane.cli.context import CliError, Context


def register(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="auth_action", required=True)
    can = sub.add_parser("can-i", help="may I do VERB on RESOURCE?")
    can.add_argument("access_verb", metavar="VERB")  # not "verb": skiffctl's own dest
    can.add_argument("resource")
    can.add_argument("name", nargs="?", default="")
    can.add_argument("-A", "--all-namespaces", action="store_true")
    can.add_argument("--namespace", "-n", default=argparse.SUPPRESS, help="(default: default)")
    can.add_argument("--subresource", default="")
    can.add_argument("--quiet", "-q", action="store_true", help="only the exit status")
    sub.add_parser("whoami", help="who the credential authenticates as")


def resource_attributes(ctx: Context) -> dict[str, str]:
    args = ctx.args
    text, name, sub = args.resource, args.name, args.subresource
    if text.startswith("/"):
        return {"nonResource": text}
    base, _, rest = text.partition("/")
    if rest:
        try:
            kinds.lookup(base)
        except kinds.UnknownKind as err:
            raise CliError(str(err)) from None
        # `pods/log` names a subresource, `pods/web` a pod: kubectl tells them
        # apart by whether the part after the slash is a known subresource.
        if rest in ("log", "exec", "attach", "portforward", "proxy", "status", "scale",
                    "binding", "eviction", "ephemeralcontainers", "token"):  # fmt: skip
            sub = sub or rest
        else:
            name = name or rest
    try:
        info = kinds.lookup(base)
        plural, group = info.plural, info.group
        namespaced = info.namespaced
    except kinds.UnknownKind:
        plural, _, group = base.partition(".")
        namespaced = True
    attrs = {"verb": args.access_verb, "resource": plural, "group": group}
    if sub:
        attrs["subresource"] = sub
    if name:
        attrs["name"] = name
    if namespaced and not args.all_namespaces:
        attrs["namespace"] = ctx.namespace
    return attrs


def run(ctx: Context) -> int:
    if ctx.args.auth_action == "whoami":
        whoami = getattr(ctx.client, "whoami", None)
        if whoami is None:
            raise CliError("this client cannot ask who it is")
        ctx.out(f"Username: {whoami()['user']}")
        return 0
    attrs = resource_attributes(ctx)
    if "nonResource" in attrs:
        spec = {
            "nonResourceAttributes": {"path": attrs["nonResource"], "verb": ctx.args.access_verb}
        }
    else:
        spec = {"resourceAttributes": attrs}
    review = ctx.client.create("SelfSubjectAccessReview", {"spec": spec})
    allowed = bool((review.get("status") or {}).get("allowed"))
    if not ctx.args.quiet:
        ctx.out("yes" if allowed else "no")
    return 0 if allowed else 1
