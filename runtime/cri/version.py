"""Version: the runtime's name and versions."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime.cri.service import RuntimeService

RUNTIME_NAME = "skiff"
RUNTIME_VERSION = "0.1.0"
API_VERSION = "v1"


def run(svc: RuntimeService, req: api_pb2.VersionRequest) -> api_pb2.VersionResponse:
    return api_pb2.VersionResponse(
        version="0.1.0",
        runtime_name=RUNTIME_NAME,
        runtime_version=RUNTIME_VERSION,
        runtime_api_version=API_VERSION,
    )
