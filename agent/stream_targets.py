"""Which runtime stream an agent-endpoint request names, and the runtime's
URL for it.

`parse_target` reads `/exec|attach|portforward/<namespace>/<pod>[/<container>]`
and its query from the target request_target.py parsed (RequestError with the HTTP status otherwise); `runtime_url`
finds the running container (labels io.kubernetes.pod.uid and
io.kubernetes.container.name) or the ready sandbox through CRI and asks the
runtime for a streaming URL (CRI Exec, Attach, PortForward). No socket is
touched here: agent/stream_proxy.py serves and relays.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import grpc

from agent.cri_client import CRIClient, CRIError
from agent.pod_config import CONTAINER_NAME_LABEL, POD_UID_LABEL
from agent.request_target import RequestTarget
from machinery.rpc_errors import rpc_status
from proto.runtime.v1 import api_pb2 as cri

Object = Mapping[str, Any]
PodLookup = Callable[[str, str], Object | None]
"""(namespace, name) -> the pod as the agent's informer has it, or None."""


class StreamRuntime(Protocol):
    """The CRI calls the proxy makes; `CRIStreams` is the real one."""

    def list_containers(self, labels: dict[str, str]) -> list[cri.Container]: ...

    def list_pod_sandboxes(self, labels: dict[str, str]) -> list[cri.PodSandbox]: ...

    def exec(self, request: cri.ExecRequest) -> str: ...

    def attach(self, request: cri.AttachRequest) -> str: ...

    def port_forward(self, request: cri.PortForwardRequest) -> str: ...


class CRIStreams:
    """`StreamRuntime` over the agent's CRI client; errors become `CRIError`."""

    def __init__(self, client: CRIClient, timeout: float = 30.0) -> None:
        self._client = client
        self._timeout = timeout

    def list_containers(self, labels: dict[str, str]) -> list[cri.Container]:
        return self._client.list_containers(labels)

    def list_pod_sandboxes(self, labels: dict[str, str]) -> list[cri.PodSandbox]:
        return self._client.list_pod_sandboxes(labels, cri.SANDBOX_READY)

    def _url(self, method: str, call: Callable[..., Any], request: Any) -> str:
        try:
            return str(call(request, timeout=self._timeout).url)
        except grpc.RpcError as err:
            code, details = rpc_status(err)
            raise CRIError(method, code, details) from None

    def exec(self, request: cri.ExecRequest) -> str:
        return self._url("Exec", self._client.runtime.Exec, request)

    def attach(self, request: cri.AttachRequest) -> str:
        return self._url("Attach", self._client.runtime.Attach, request)

    def port_forward(self, request: cri.PortForwardRequest) -> str:
        return self._url("PortForward", self._client.runtime.PortForward, request)


class RequestError(Exception):
    """A request the proxy answers itself, with an HTTP status."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------- planning (pure)


def _flag(query: Mapping[str, list[str]], name: str) -> bool:
    values = query.get(name) or []
    return bool(values) and values[-1].strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Target:
    """What one request asks for, parsed from its path and query."""

    kind: str  # exec | attach | portforward
    namespace: str
    pod: str
    container: str = ""
    command: tuple[str, ...] = ()
    stdin: bool = False
    stdout: bool = False
    stderr: bool = False
    tty: bool = False
    ports: tuple[int, ...] = ()


def parse_target(request: RequestTarget) -> Target:
    """The stream a parsed request target names (request_target.py: the same
    value the caller was authorized for); `RequestError` for one it cannot serve."""
    words = list(request.segments)
    query = request.params()
    if not words or words[0] not in ("exec", "attach", "portforward"):
        raise RequestError(404, "404 page not found")
    kind = words[0]
    if kind == "portforward":
        if len(words) != 3:
            raise RequestError(404, "expected /portforward/<namespace>/<pod>")
        ports: list[int] = []
        # Repeated, or comma-separated in one value (the Python client's
        # `ports=1234,1235`), as kubelet reads them.
        for value in [v for given in query.get("port") or [] for v in given.split(",")]:
            try:
                port = int(value)
            except ValueError:
                port = 0
            if not 0 < port < 65536:
                raise RequestError(400, f"invalid port {value!r}")
            ports.append(port)
        return Target(kind, words[1], words[2], ports=tuple(ports))
    if len(words) == 3 and (query.get("container") or [""])[-1]:
        words.append((query.get("container") or [""])[-1])
    if len(words) != 4:
        raise RequestError(404, f"expected /{kind}/<namespace>/<pod>/<container>")
    target = Target(
        kind,
        words[1],
        words[2],
        words[3],
        command=tuple(query.get("command") or []),
        stdin=_flag(query, "stdin"),
        stdout=_flag(query, "stdout"),
        stderr=_flag(query, "stderr"),
        tty=_flag(query, "tty"),
    )
    if kind == "exec" and not target.command:
        raise RequestError(400, "you must specify at least one command for the container")
    if not (target.stdin or target.stdout or target.stderr):
        raise RequestError(400, "you must specify at least 1 of stdin, stdout, stderr")
    return target


def runtime_url(target: Target, pods: PodLookup, runtime: StreamRuntime) -> str:
    """Ask the runtime for the streaming URL that serves `target`."""
    pod = pods(target.namespace, target.pod)
    if pod is None:
        raise RequestError(404, f'pod "{target.pod}" not found on this node')
    uid = str((pod.get("metadata") or {}).get("uid") or "")
    try:
        if target.kind == "portforward":
            sandboxes = runtime.list_pod_sandboxes({POD_UID_LABEL: uid})
            if not sandboxes:
                raise RequestError(404, f'pod "{target.pod}" has no ready sandbox')
            newest = max(sandboxes, key=lambda s: s.created_at)
            return runtime.port_forward(
                cri.PortForwardRequest(pod_sandbox_id=newest.id, port=list(target.ports))
            )
        found = runtime.list_containers(
            {POD_UID_LABEL: uid, CONTAINER_NAME_LABEL: target.container}
        )
        running = [c for c in found if c.state == cri.CONTAINER_RUNNING]
        if not running:
            if not found:
                raise RequestError(404, f'container "{target.container}" not found in pod')
            raise RequestError(
                400, f'container "{target.container}" in pod "{target.pod}" is not running'
            )
        cid = max(running, key=lambda c: c.metadata.attempt).id
        if target.kind == "exec":
            return runtime.exec(
                cri.ExecRequest(
                    container_id=cid,
                    cmd=list(target.command),
                    tty=target.tty,
                    stdin=target.stdin,
                    stdout=target.stdout,
                    stderr=target.stderr and not target.tty,
                )
            )
        return runtime.attach(
            cri.AttachRequest(
                container_id=cid,
                tty=target.tty,
                stdin=target.stdin,
                stdout=target.stdout,
                stderr=target.stderr and not target.tty,
            )
        )
    except CRIError as err:
        code = 404 if err.not_found else 500
        raise RequestError(code, f"runtime {err.method}: {err.message}") from None


# ---------------------------------------------------------------- relaying bytes
