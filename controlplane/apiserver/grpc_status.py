"""API errors as gRPC status codes: the server's one table (`STATUS_CODES`).
The client maps them back (apiclient.ERRORS)."""

from __future__ import annotations

import grpc

from controlplane.apiserver.audit import HTTP_STATUS
from controlplane.client import errors

STATUS_CODES: dict[type[errors.ApiError], grpc.StatusCode] = {
    errors.NotFound: grpc.StatusCode.NOT_FOUND,
    errors.AlreadyExists: grpc.StatusCode.ALREADY_EXISTS,
    errors.Conflict: grpc.StatusCode.ABORTED,
    errors.Invalid: grpc.StatusCode.INVALID_ARGUMENT,
    errors.Gone: grpc.StatusCode.OUT_OF_RANGE,
    errors.Unauthenticated: grpc.StatusCode.UNAUTHENTICATED,
    errors.Forbidden: grpc.StatusCode.PERMISSION_DENIED,
    errors.Unavailable: grpc.StatusCode.UNAVAILABLE,
    errors.TooManyRequests: grpc.StatusCode.RESOURCE_EXHAUSTED,
}


# A batch item's gRPC code (CreateResult.code) -> the HTTP status of that error.
ITEM_HTTP: dict[int, int] = {
    grpc_code.value[0]: HTTP_STATUS[cls] for cls, grpc_code in STATUS_CODES.items()
}


def status_code(err: errors.ApiError) -> grpc.StatusCode:
    for cls in type(err).__mro__:
        code = STATUS_CODES.get(cls)
        if code is not None:
            return code
    return grpc.StatusCode.UNKNOWN
