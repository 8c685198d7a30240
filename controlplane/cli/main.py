"""skiffctl entry point: parse global flags and the verb, dispatch to the verb's module.

One module per verb (`apply.py`, `get.py`, ...), each with `register(parser)`
to declare its flags and `run(ctx) -> int`. `VERBS` is the dispatch table.
main() maps failures to
kubectl's messages and exit codes: API errors print `Error from server
(Reason): ...` and exit 1, user errors `error: ...` exit 1, unknown verbs or
flags print usage and exit 2 (argparse). The client is made by an injected
factory (tests pass a fake); the default one reads the credential file and
connects over gRPC only when a verb first needs the API.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TextIO

from controlplane.cli.context import ClientFactory, CliError, Context
from controlplane.client import errors
from controlplane.client.interface import ApiClient
from machinery.clock import Clock, RealClock


@dataclass(frozen=True)
class Verb:
    module: str
    help: str


VERBS: dict[str, Verb] = {
    "apply": Verb("apply", "create or update objects from manifests (-f FILE|DIR|-)"),
    "get": Verb("get", "list objects, or show some by name"),
    "describe": Verb("describe", "show an object in detail, with its events"),
    "delete": Verb("delete", "delete objects by kind and name, TYPE/NAME, selector or -f"),
    "patch": Verb("patch", "change fields of an object with a JSON merge patch"),
    "scale": Verb("scale", "set the replica count of a Deployment, ReplicaSet or StatefulSet"),
    "cordon": Verb("cordon", "mark a node unschedulable"),
    "uncordon": Verb("cordon", "mark a node schedulable"),
    "drain": Verb("drain", "cordon a node and evict its pods"),
    "events": Verb("events", "list events"),
    "wait": Verb("wait", "wait for a condition on objects (--for=condition=Ready|delete|jsonpath)"),
    "create": Verb("create", "create objects from manifests, or a namespace"),
    "label": Verb("label", "set or remove labels"),
    "annotate": Verb("label", "set or remove annotations"),
    "api-resources": Verb("api_resources", "list the kinds the cluster serves"),
    "rollout": Verb("rollout", "manage a rollout (status, history, undo, pause, resume, restart)"),
    "autoscale": Verb("autoscale", "create a HorizontalPodAutoscaler for a workload"),
    "logs": Verb("logs", "print a container's logs"),
    "exec": Verb("exec", "run a command in a container"),
    "attach": Verb("attach", "attach to a running container"),
    "port-forward": Verb("port_forward", "forward local ports to a pod"),
    "top": Verb("top", "show resource usage of nodes or pods"),
    "auth": Verb("auth", "inspect authorization: can-i VERB RESOURCE, whoami"),
    "job": Verb("vcjob", "Volcano jobs, as vcctl: list, view, suspend, resume"),
    "queue": Verb(
        "queue", "Volcano queues, as vcctl: create, list, get, operate --action open|close"
    ),
}


def _verb_module(verb: str) -> ModuleType:
    return importlib.import_module(f"controlplane.cli.{VERBS[verb].module}")


def _global_flags(parser: argparse.ArgumentParser, suppress: bool) -> None:
    default: Any = argparse.SUPPRESS if suppress else None
    parser.add_argument(
        "--config",
        default=default,
        help="credential file (default: $SKIFF_CONFIG, ~/.skiff/config, /etc/skiff/admin.conf)",
    )
    parser.add_argument("--server", "-s", default=default, help="API server address (host:port)")
    parser.add_argument("--namespace", "-n", default=default, help="namespace (default: default)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="skiffctl", description="Control a skiff cluster.")
    _global_flags(parser, suppress=False)
    sub = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for verb, spec in VERBS.items():
        text = spec.help
        p = sub.add_parser(verb, help=text, description=text)
        _global_flags(p, suppress=True)
        _verb_module(verb).register(p)
        # kubectl lets flags and positionals interleave (`label nodes --all a=b`);
        # argparse does not, so main() appends stray positionals here.
        rest = next(
            (a.dest for a in p._actions if not a.option_strings and a.nargs in ("*", "+")), None
        )
        p.set_defaults(_rest_dest=rest)
    return parser


def default_client_factory(args: argparse.Namespace) -> ApiClient:
    """Read the credential file (lookup order in controlplane.client.config) and connect."""
    from controlplane.client import config as client_config

    server = getattr(args, "server", None)
    try:
        cfg = client_config.load_config(getattr(args, "config", None), server)
    except client_config.ConfigError as err:
        if not server or getattr(args, "config", None):
            raise CliError(str(err)) from None
        cfg = client_config.ClientConfig(server=server)
    try:
        apiclient = importlib.import_module("controlplane.client.apiclient")
    except ModuleNotFoundError:
        raise CliError("the API client is not available in this build") from None
    client: ApiClient = apiclient.connect(cfg, field_manager=field_manager(args.verb))
    return client


def field_manager(verb: str) -> str:
    """Who a verb's writes are recorded for in managedFields, named as kubectl
    names its own (kubectl-create, kubectl-client-side-apply)."""
    return "skiffctl-client-side-apply" if verb == "apply" else f"skiffctl-{verb}"


def _report(ctx: Context, err: errors.ApiError) -> int:
    message = str(err)
    if isinstance(err, errors.Unavailable):
        ctx.err(f"Unable to connect to the server: {message}")
    elif isinstance(err, errors.Unauthenticated):
        ctx.err(f"error: You must be logged in to the server (Unauthorized): {message}")
    else:
        ctx.err(f"Error from server ({err.reason}): {message}")
    return 1


def main(
    argv: Sequence[str] | None = None,
    client_factory: ClientFactory | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    stdin: TextIO | None = None,
    clock: Clock | None = None,
) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(args_list)
        if extra:
            stray = [e for e in extra if e == "-" or not e.startswith("-")]
            dest = getattr(args, "_rest_dest", None)
            if len(stray) != len(extra) or dest is None:
                parser.error(f"unrecognized arguments: {' '.join(extra)}")
            getattr(args, dest).extend(stray)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    ctx = Context(
        args=args,
        factory=client_factory or default_client_factory,
        stdout=stdout or sys.stdout,
        stderr=stderr or sys.stderr,
        stdin=stdin or sys.stdin,
        clock=clock or RealClock(),
    )
    try:
        code: int = _verb_module(args.verb).run(ctx)
        return code
    except CliError as err:
        ctx.err(f"error: {err}")
        return err.code
    except errors.ApiError as err:
        return _report(ctx, err)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
