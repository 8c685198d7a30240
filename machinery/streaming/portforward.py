"""Names of the port-forward protocol (`portforward.k8s.io`) over SPDY/3.1.

A client opens streams in pairs sharing a `requestID` header: an `error`
stream and a `data` stream, each with a `port` header. Only names live here;
serving the pairs is runtime/streaming/portforward.py's job and opening them
skiffctl's. This module must never do I/O.
"""

from __future__ import annotations

PROTOCOL = "portforward.k8s.io"

HEADER_STREAM_TYPE = "streamType"
HEADER_PORT = "port"
HEADER_REQUEST_ID = "requestID"

STREAM_ERROR = "error"
STREAM_DATA = "data"
