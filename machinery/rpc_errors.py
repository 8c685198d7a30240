"""What a failed gRPC call said: the one place that reads a grpc.RpcError
(its code and details, and the trailing metadata it ended with).

An RpcError raised by a stub is also a grpc.Call with code() and details(),
but the type does not say so (and an error raised before the call started
has neither), so every caller needs the same guarded reads.
"""

from __future__ import annotations

import grpc


def rpc_status(err: grpc.RpcError) -> tuple[grpc.StatusCode, str]:
    """(status code, details) of a failed call: UNKNOWN when the error carries
    no code, its details ("" when the call gave none), or str(err) when the
    error is no call at all."""
    code = err.code() if hasattr(err, "code") else None
    if not isinstance(code, grpc.StatusCode):
        code = grpc.StatusCode.UNKNOWN
    if not hasattr(err, "details"):
        return code, str(err)
    return code, err.details() or ""


def rpc_trailers(err: grpc.RpcError) -> dict[str, str]:
    """The trailing metadata of a failed call ({} when it has none)."""
    read = getattr(err, "trailing_metadata", None)
    try:
        pairs = read() if callable(read) else None
    except Exception:  # a call that never started has none to give
        return {}
    out: dict[str, str] = {}
    for key, value in pairs or ():
        out[str(key)] = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
    return out
