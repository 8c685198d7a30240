"""skiffctl logs: print a container's log, through the API server.

`logs [-f] [-c CONTAINER] [--tail N] [--since 5m] [-p|--previous]
[--timestamps] [--limit-bytes N] POD [CONTAINER] | pod/POD | TYPE/NAME`.
The pod is read from the API server and its log streamed from the pods/log
subresource (`GET .../pods/<name>/log?container=&follow=..`), which
authorizes the caller and reads the node's agent with the API server's own
credential: skiffctl never dials an agent and its token never leaves the
API server. As kubectl does, stdout and stderr lines of the container both
go to stdout, byte for byte. Without -c, a pod with several containers uses
the `kubectl.kubernetes.io/default-container` annotation or its first
container and says so on stderr; `TYPE/NAME` of a workload picks one of its
pods.

`api_config` and `api_failure` are shared with `top`, `exec`, `attach` and
`port-forward`; the REST connection is controlplane.client.apirest's.
"""

from __future__ import annotations

import argparse
import codecs
import math
from dataclasses import dataclass
from urllib.parse import urlencode

from controlplane.cli import printers
from controlplane.cli.context import CliError, Context
from controlplane.cli.resources import parse_targets
from controlplane.cli.wait import parse_duration
from controlplane.client import apirest, errors
from controlplane.client import config as client_config
from controlplane.client.apirest import pod_path
from controlplane.client.config import ClientConfig
from controlplane.client.interface import ListOptions, Object
from proto.agent.v1 import agent_pb2 as pb

DEFAULT_CONTAINER = "kubectl.kubernetes.io/default-container"
LOG_TIMEOUT = 30.0  # for the answer, and between chunks unless following
CHUNK = 65536


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", nargs="+", metavar="POD [CONTAINER] | TYPE/NAME")
    parser.add_argument("-c", "--container", default="")
    parser.add_argument("-f", "--follow", action="store_true", help="keep streaming new lines")
    parser.add_argument("--tail", type=int, default=-1, help="last N lines (-1: all)")
    parser.add_argument("--since", default="", help="only lines newer than this (e.g. 5s, 2m, 1h)")
    parser.add_argument("-p", "--previous", action="store_true", help="the previous instance")
    parser.add_argument("--timestamps", action="store_true", help="prefix RFC 3339 timestamps")
    parser.add_argument("--limit-bytes", type=int, default=0, help="stop after this many bytes")


# ---- reaching the API server's streams (shared with top and exec) ----------------------


def api_config(ctx: Context) -> ClientConfig:
    """The API server and credential skiffctl uses."""
    config = getattr(ctx.client, "config", None)
    if isinstance(config, ClientConfig):
        return config
    try:
        return client_config.load_config(getattr(ctx.args, "config", None))
    except client_config.ConfigError as err:
        raise CliError(str(err)) from None


def api_failure(err: errors.ApiError) -> str:
    """What to print for a refused request, in kubectl's words."""
    if isinstance(err, errors.Unavailable):
        return f"error: {err}"
    if isinstance(err, errors.Unauthenticated):
        return f"error: You must be logged in to the server (Unauthorized): {err}"
    return f"Error from server ({err.reason}): {err}"


# ---- choosing the pod and container --------------------------------------------------


@dataclass(frozen=True)
class LogTarget:
    pod: Object
    container: str


def _running_first(pod: Object) -> tuple[int, str]:
    phase = printers.status(pod).get("phase") or "Pending"
    return (0 if phase == "Running" else 1, printers.name(pod))


def _pick_pod(ctx: Context, words: list[str]) -> tuple[Object, str]:
    """The pod named by the arguments, and a container named positionally."""
    container = ""
    if "/" in words[0]:
        if len(words) > 1:
            raise CliError("only one of TYPE/NAME may be given to logs")
        [target] = parse_targets(words[:1], need_name=True)
        assert target.name is not None
    else:
        if len(words) > 2:
            raise CliError("logs takes POD [CONTAINER] or TYPE/NAME")
        [target] = parse_targets(["pod", words[0]], need_name=True)
        container = words[1] if len(words) == 2 else ""
    assert target.name is not None
    if target.info.key == "Pod":
        return ctx.client.get("Pod", target.name, ctx.namespace), container
    if not target.info.namespaced or target.info.key not in (
        "Deployment",
        "ReplicaSet",
        "StatefulSet",
        "DaemonSet",
        "Job",
        "Service",
    ):
        raise CliError(f"cannot get logs of a {target.info.key}; name a pod or a workload")
    owner = ctx.client.get(target.info.key, target.name, ctx.namespace)
    sp = printers.spec(owner)
    selector = printers.selector_string(sp.get("selector")) if "selector" in sp else ""
    if target.info.key == "Service":
        selector = ",".join(f"{k}={v}" for k, v in sorted((sp.get("selector") or {}).items()))
    if not selector or selector == printers.NONE:
        raise CliError(f"{printers.type_name(target.info, target.name)} selects no pods")
    pods = ctx.client.list("Pod", ctx.namespace, ListOptions(label_selector=selector)).items
    pods = [p for p in pods if not printers.meta(p).get("deletionTimestamp")]
    if not pods:
        raise CliError(f"no pods found for {printers.type_name(target.info, target.name)}")
    pods.sort(key=_running_first)
    if len(pods) > 1:
        ctx.err(f"Found {len(pods)} pods, using pod/{printers.name(pods[0])}")
    return pods[0], container


def choose(ctx: Context, words: list[str], flag_container: str) -> LogTarget:
    pod, positional = _pick_pod(ctx, words)
    if flag_container and positional and flag_container != positional:
        raise CliError("only one of -c or an inline [CONTAINER] argument is allowed")
    container = flag_container or positional
    sp = printers.spec(pod)
    names = [str(c.get("name")) for c in sp.get("containers") or []]
    if not container and len(names) > 1:
        default = (printers.meta(pod).get("annotations") or {}).get(DEFAULT_CONTAINER, "")
        container = default if default in names else names[0]
        ctx.err(f'Defaulted container "{container}" out of: {", ".join(names)}')
    return LogTarget(pod, container)


def request_for(args: argparse.Namespace) -> pb.LogsRequest:
    """The ContainerLogs request for the flags, checked before anything is read.

    The pod fields are filled in once the pod is known. The agent reads a
    negative tail_lines as "no old lines" and 0 as "all", so --tail=0 is sent as -1.
    """
    since = 0
    if args.since:
        try:
            since = max(1, math.ceil(parse_duration(args.since)))
        except CliError:
            raise CliError(f"invalid --since {args.since!r} (use e.g. 30s, 5m, 1h)") from None
    if args.tail < -1:
        raise CliError(f"--tail must be -1 or more, not {args.tail}")
    if args.limit_bytes < 0:
        raise CliError("--limit-bytes must be greater than 0")
    tail = -1 if args.tail == 0 else max(0, args.tail)
    return pb.LogsRequest(
        follow=bool(args.follow),
        tail_lines=tail,
        since_seconds=since,
        previous=bool(args.previous),
        timestamps=bool(args.timestamps),
        limit_bytes=args.limit_bytes,
    )


class Output:
    """Log bytes to stdout: as they are where stdout has a byte buffer, else decoded
    as UTF-8 incrementally (a character split across chunks stays whole)."""

    def __init__(self, ctx: Context) -> None:
        self.text = ctx.stdout
        self.buffer = getattr(ctx.stdout, "buffer", None)
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def write(self, data: bytes) -> None:
        if self.buffer is not None:
            self.text.flush()
            self.buffer.write(data)
            self.buffer.flush()
        else:
            self.text.write(self.decoder.decode(data))
            self.text.flush()

    def close(self) -> None:
        if self.buffer is None:
            self.text.write(self.decoder.decode(b"", final=True))
            self.text.flush()


def query(request: pb.LogsRequest) -> str:
    """The pods/log query of a ContainerLogs request."""
    q: list[tuple[str, str]] = [("container", request.container)]
    if request.follow:
        q.append(("follow", "true"))
    if request.tail_lines:
        q.append(("tailLines", str(max(0, request.tail_lines))))
    for name, value in (("sinceSeconds", request.since_seconds),
                        ("limitBytes", request.limit_bytes)):  # fmt: skip
        if value:
            q.append((name, str(value)))
    if request.previous:
        q.append(("previous", "true"))
    if request.timestamps:
        q.append(("timestamps", "true"))
    return urlencode(q)


def run(ctx: Context) -> int:
    args = ctx.args
    request = request_for(args)
    target = choose(ctx, args.target, args.container)
    request.namespace = str(printers.meta(target.pod).get("namespace") or "default")
    request.pod = printers.name(target.pod)
    request.container = target.container
    node_name = printers.spec(target.pod).get("nodeName")
    pod_name = printers.name(target.pod)
    if not node_name:
        phase = printers.status(target.pod).get("phase") or "Pending"
        raise CliError(
            f'pod "{pod_name}" is not scheduled to a node yet (phase {phase}); '
            "it has no logs until it runs"
        )
    path = pod_path(request.namespace, request.pod, "log") + "?" + query(request)
    body_timeout = None if request.follow else LOG_TIMEOUT
    try:
        response = apirest.get(api_config(ctx), path, LOG_TIMEOUT, body_timeout)
    except errors.ApiError as err:
        ctx.err(api_failure(err))
        return 1
    out = Output(ctx)
    try:
        while chunk := response.read1(CHUNK):
            out.write(chunk)
    except OSError as err:
        ctx.err(f"error: the log stream ended: {err}")
        return 1
    finally:
        out.close()
        response.close()
    return 0
