"""The one place where domain errors become gRPC status codes.

Every CRI RPC goes through `rpc_boundary`: it logs the call once (name,
duration, outcome), turns a `runtime.errors` exception into the matching
status code with its message, and turns anything unexpected into INTERNAL
with the exception text, after logging the traceback. Nothing else in the
runtime touches grpc status codes.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import grpc

from runtime import errors

log = logging.getLogger("skiff.runtime.cri")

CODES: dict[type[errors.RuntimeError_], grpc.StatusCode] = {
    errors.NotFound: grpc.StatusCode.NOT_FOUND,
    errors.AlreadyExists: grpc.StatusCode.ALREADY_EXISTS,
    errors.InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    errors.FailedPrecondition: grpc.StatusCode.FAILED_PRECONDITION,
    errors.Unavailable: grpc.StatusCode.UNAVAILABLE,
    errors.DeadlineExceeded: grpc.StatusCode.DEADLINE_EXCEEDED,
    errors.Unimplemented: grpc.StatusCode.UNIMPLEMENTED,
    errors.ResourceExhausted: grpc.StatusCode.RESOURCE_EXHAUSTED,
    errors.Unknown: grpc.StatusCode.UNKNOWN,
}

F = TypeVar("F", bound=Callable[..., Any])


def code_for(exc: BaseException) -> grpc.StatusCode:
    for cls in type(exc).__mro__:
        code = CODES.get(cls)
        if code is not None:
            return code
    return grpc.StatusCode.INTERNAL


def abort(context: grpc.ServicerContext, exc: BaseException) -> NoReturn:
    context.abort(code_for(exc), str(exc) or type(exc).__name__)
    raise AssertionError("context.abort returned")  # pragma: no cover


def rpc_boundary(name: str) -> Callable[[F], F]:
    """Decorate a servicer method `(self, request, context)`."""

    def wrap(func: F) -> F:
        @functools.wraps(func)
        def call(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
            start = time.monotonic()
            try:
                response = func(self, request, context)
            except errors.RuntimeError_ as exc:
                log.info("rpc=%s error=%s code=%s", name, exc, code_for(exc).name)
                abort(context, exc)
            except Exception as exc:
                if isinstance(exc, grpc.RpcError) or type(exc).__name__ == "_AbortError":
                    raise
                log.exception("rpc=%s internal error", name)
                abort(context, exc)
            log.debug("rpc=%s ms=%.2f", name, (time.monotonic() - start) * 1000)
            return response

        return call  # type: ignore[return-value]

    return wrap
