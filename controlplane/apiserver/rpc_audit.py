"""The audit log's lines for gRPC calls: one per call (one per item of a
CreateMany, as Kubernetes logs each create), with the Kubernetes verb,
objectRef and HTTP status the call amounts to. The REST front door writes
its own (rest/auditing.py); both go to one AuditLog.
"""

from __future__ import annotations

import datetime
import time
from typing import Any

from controlplane.api import jsoncodec
from controlplane.apiserver.audit import AuditLog
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.codec import kind_info
from controlplane.apiserver.grpc_status import item_http_status
from controlplane.client import errors
from machinery.apierrors import http_status

# RPC -> (Kubernetes verb, subresource) for the audit log.
AUDITED: dict[str, tuple[str, str]] = {
    "Create": ("create", ""), "Get": ("get", ""), "List": ("list", ""),
    "ListStream": ("list", ""), "Update": ("update", ""), "Patch": ("patch", ""),
    "Delete": ("delete", ""), "Watch": ("watch", ""), "GetScale": ("get", "scale"),
    "UpdateScale": ("update", "scale"), "Bind": ("create", "binding"),
    "CreateMany": ("create", ""), "Join": ("create", "join"),
}  # fmt: skip
ANONYMOUS = Identity("system:anonymous", groups=("system:unauthenticated",))


def _object_name(data: bytes) -> str:
    """metadata.name of a create's body, "" when it has none or is not JSON."""
    try:
        meta = jsoncodec.loads(data).get("metadata")
    except (ValueError, UnicodeDecodeError, AttributeError, jsoncodec.DecodeError):
        return ""
    return str(meta.get("name") or "") if isinstance(meta, dict) else ""


def audit_call(
    audit: AuditLog,
    name: str,
    request: Any,
    who: Identity | None,
    outcome: Exception | None,
    start: float,
    result: Any = None,
) -> None:
    """One audit line per call; CreateMany writes one per item, as Kubernetes
    logs each create (its objectRef and, when the call itself succeeded, its
    own result's code)."""
    verb, sub = AUDITED[name]
    code = 200 if outcome is None else http_status(outcome)
    elapsed = time.monotonic() - start
    received = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=elapsed)
    if name == "CreateMany":
        results = list(getattr(result, "results", ()))
        for i, item in enumerate(request.items):
            item_code = code
            if outcome is None and i < len(results):
                item_code = item_http_status(results[i]) if results[i].code else 200
            _audit_line(audit, who, verb, item.kind, item.namespace, _object_name(item.json),
                        "", item_code, received, elapsed, item.json)  # fmt: skip
        return
    kind = getattr(request, "kind", "") or ("Pod" if name == "Bind" else "")
    if name == "Join":
        kind = "Node"
    _audit_line(
        audit, who, verb, kind, getattr(request, "namespace", ""),
        getattr(request, "name", "") or getattr(request, "node_name", ""),
        getattr(request, "subresource", "") or sub, code, received, elapsed,
        getattr(request, "json", b"") or getattr(request, "patch", b"") or None,
    )  # fmt: skip


def _audit_line(
    audit: AuditLog,
    who: Identity | None,
    verb: str,
    kind: str,
    namespace: str,
    name: str,
    subresource: str,
    code: int,
    received: datetime.datetime,
    elapsed: float,
    body: bytes | None,
) -> None:
    try:
        info = kind_info(kind) if kind else None
    except errors.Invalid:
        info = None
    audit.record(
        who or ANONYMOUS,
        verb,
        {
            "resource": info.plural if info else kind,
            "apiGroup": info.group if info else "",
            "namespace": namespace,
            "name": name,
            "subresource": subresource,
        },
        code,
        received,
        elapsed * 1000,
        body or None,
    )
