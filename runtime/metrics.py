"""The runtime's /metrics: containerd's gRPC server series and process metrics.

containerd serves, on its `[metrics] address`, go-grpc-prometheus's server
series for its CRI API; the runtime does the same under the same names:
`grpc_server_started_total`, `grpc_server_handled_total` (with
`grpc_code`) and `grpc_server_handling_seconds` by `grpc_type`,
`grpc_service` and `grpc_method` (bounded: the CRI's methods), and
`process_*`/`python_*`. `skiff runtime --metrics-address HOST:PORT` serves
them; none is served without it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc

from machinery import metrics
from machinery.metrics import Counter, Histogram

LABELS = ["grpc_type", "grpc_service", "grpc_method"]


class RuntimeMetrics:
    def __init__(self) -> None:
        self.registry = metrics.registry()
        r = self.registry
        self.started = Counter("grpc_server_started_total",
                               "Total number of RPCs started on the server.", LABELS,
                               registry=r)  # fmt: skip
        self.handled = Counter("grpc_server_handled_total",
                               "Total number of RPCs completed on the server, regardless of "
                               "success or failure.", [*LABELS, "grpc_code"], registry=r)  # fmt: skip
        self.seconds = Histogram("grpc_server_handling_seconds",
                                 "Histogram of response latency (seconds) of gRPC that had been "
                                 "application-level handled by the server.", LABELS,
                                 buckets=metrics.DEFAULT_BUCKETS, registry=r)  # fmt: skip

    def interceptor(self) -> grpc.ServerInterceptor:
        return _Interceptor(self)


def _code(context: grpc.ServicerContext, failed: bool) -> str:
    code = context.code() if hasattr(context, "code") else None
    if isinstance(code, grpc.StatusCode):
        return str(code.name)
    return "Unknown" if failed else "OK"


class _Interceptor(grpc.ServerInterceptor):
    def __init__(self, owner: RuntimeMetrics) -> None:
        self.owner = owner

    def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Any],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:  # fmt: skip
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        service, _, method = str(handler_call_details.method).lstrip("/").rpartition("/")
        if handler.unary_unary is not None:
            labels = ("unary", service, method)
            return grpc.unary_unary_rpc_method_handler(
                self._unary(handler.unary_unary, labels),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            labels = ("server_stream", service, method)
            return grpc.unary_stream_rpc_method_handler(
                self._stream(handler.unary_stream, labels),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler  # client and bidirectional streams: the CRI has none

    def _unary(self, behavior: Callable[..., Any], labels: tuple[str, str, str]) -> Any:
        owner = self.owner

        def call(request: Any, context: grpc.ServicerContext) -> Any:
            owner.started.labels(*labels).inc()
            start = time.perf_counter()
            failed = True
            try:
                result = behavior(request, context)
                failed = False
                return result
            finally:
                owner.handled.labels(*labels, _code(context, failed)).inc()
                owner.seconds.labels(*labels).observe(time.perf_counter() - start)

        return call

    def _stream(self, behavior: Callable[..., Any], labels: tuple[str, str, str]) -> Any:
        owner = self.owner

        def call(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            owner.started.labels(*labels).inc()
            start = time.perf_counter()
            failed = True
            try:
                yield from behavior(request, context)
                failed = False
            finally:
                owner.handled.labels(*labels, _code(context, failed)).inc()
                owner.seconds.labels(*labels).observe(time.perf_counter() - start)

        return call
