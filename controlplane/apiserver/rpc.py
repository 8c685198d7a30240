"""The one wrapper every gRPC call of the API server goes through (`rpc`):
it checks the request size, authenticates the bearer token, takes a
flow-control seat of its priority level (flowcontrol.py), logs the call once (and to the audit log
when there is one: rpc_audit.py), and turns API errors into gRPC status
codes (grpc_status.py). Nothing else in the server touches
status codes.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc

from controlplane.api import limits
from controlplane.apiserver.audit import AuditLog
from controlplane.apiserver.auth import Identity, TokenAuthority
from controlplane.apiserver.authn import bearer_token, identify
from controlplane.apiserver.flowcontrol import VERBS, FlowControl, digest
from controlplane.apiserver.grpc_status import abort, status_code
from controlplane.apiserver.metrics import ApiServerMetrics
from controlplane.apiserver.relayedpeers import RelayedPeers
from controlplane.apiserver.rpc_audit import AUDITED, audit_call
from controlplane.client import errors
from machinery.apierrors import http_status

log = logging.getLogger("controlplane.apiserver.servicer")

R = TypeVar("R")


def _token(context: grpc.ServicerContext) -> str:
    for key, value in context.invocation_metadata():
        if key == "authorization":
            return bearer_token(value.decode() if isinstance(value, bytes) else str(value))
    return ""


@dataclass(eq=False)
class RpcBase:
    # None: no authentication (in-process tests); everyone is admin.
    authority: TokenAuthority | None
    flow: FlowControl | None = None
    audit: AuditLog | None = None
    metrics: ApiServerMetrics | None = None
    # Set by the server that relays gRPC through its front door: the client
    # certificates of relayed connections (None: bearer tokens only).
    peers: RelayedPeers | None = field(default=None, init=False)

    def _in_lane(
        self,
        func: Callable[..., R],
        request: Any,
        context: grpc.ServicerContext,
        who: Identity,
        verb: str,
    ) -> R:
        """func, holding a seat of its priority level (a stream holds it to its end)."""
        flow = self.flow
        assert flow is not None
        d = digest(who, verb, getattr(request, "kind", ""), getattr(request, "namespace", ""))
        seat = flow.acquire(d)
        streaming = False
        try:
            result = func(self, request, context, who)
            if isinstance(result, Iterator):
                streaming = True
                return _released(result, lambda: flow.release(seat))  # type: ignore[return-value]
            return result
        finally:
            if not streaming:
                flow.release(seat)

    def identify(self, context: grpc.ServicerContext) -> Identity:
        peers = self.peers
        cert = peers.certificate(context.peer()) if peers is not None else None
        return identify(self.authority, cert, _token(context))


def _released(stream: Iterator[Any], release: Callable[[], None]) -> Iterator[Any]:
    """A streamed answer that holds its flow-control slot until it ends."""
    try:
        yield from stream
    finally:
        release()


def _count(
    metrics: ApiServerMetrics, name: str, request: Any, outcome: Exception | None, start: float
) -> None:
    key = metrics.rpc_labels(name, getattr(request, "kind", ""), getattr(request, "namespace", ""))
    if key is not None:
        code = http_status(outcome) if outcome is not None else (201 if key[0] == "POST" else 200)
        metrics.request(key, code, time.monotonic() - start)


def rpc(
    name: str, authenticate: bool = True, mutating: bool | None = None
) -> Callable[[Callable[..., R]], Callable[[Any, Any, grpc.ServicerContext], R]]:
    """mutating: whether the call takes a flow-control seat (None: not counted, as
    watches, which have caps of their own); True or False alike take one."""

    def wrap(func: Callable[..., R]) -> Callable[[Any, Any, grpc.ServicerContext], R]:
        @functools.wraps(func)
        def handler(self: RpcBase, request: Any, context: grpc.ServicerContext) -> R:
            start = time.monotonic()
            who: Identity | None = None
            outcome: Exception | None = None
            result: Any = None
            try:
                limits.check_size(request.ByteSize(), "request")
                if not authenticate:
                    result = func(self, request, context)
                    return result  # type: ignore[no-any-return]
                who = self.identify(context)
                if self.flow is None or mutating is None:
                    result = func(self, request, context, who)
                else:
                    result = self._in_lane(func, request, context, who, VERBS.get(name, "get"))
                return result  # type: ignore[no-any-return]
            except errors.ApiError as err:
                outcome = err
                code = status_code(err)
                log.debug("rpc=%s code=%s error=%s", name, code.name, err)
                abort(context, err)
            except Exception as err:
                outcome = err
                log.exception("rpc=%s failed", name)
                abort(context, errors.InternalError(f"internal error: {err}"))
            finally:
                if self.metrics is not None:
                    _count(self.metrics, name, request, outcome, start)
                if self.audit is not None and name in AUDITED:
                    audit_call(self.audit, name, request, who, outcome, start, result)
                if log.isEnabledFor(logging.DEBUG):
                    log.debug("rpc=%s ms=%.2f", name, (time.monotonic() - start) * 1000)
            raise AssertionError("unreachable")

        return handler

    return wrap
