"""The pure modules the REST API calls that may not be in this build yet.

Patch flavours (JSON patch, strategic merge, server-side apply), Table
printing and the OpenAPI documents live in their own modules
(controlplane.api.*, controlplane.apiserver.tables); this is the one place that imports them, at
first use, so the REST API serves what it can while one is missing and a
request that needs it gets a clear 415/406.
"""

from __future__ import annotations

import importlib
from types import ModuleType

JSON_PATCH = "controlplane.api.json_patch"
STRATEGIC_MERGE = "controlplane.api.strategic_merge"
SERVER_SIDE_APPLY = "controlplane.api.server_side_apply"
TABLES = "controlplane.apiserver.tables"
OPENAPI = "controlplane.api.openapi"


def module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name != name:
            raise
        return None
