"""The CSR cleaner: old CertificateSigningRequests deleted, as
kube-controller-manager's csrcleaner (pkg/controller/certificates/cleaner).

A request is deleted once it is

- approved and issued (a certificate in status) and the Approved
  condition's lastUpdateTime is more than an hour old;
- denied, or failed, and that condition's lastUpdateTime is more than an
  hour old;
- pending (no condition at all) and created more than 24 hours ago;
- approved and issued, and its certificate has expired (NotAfter passed).

Kubernetes lists every request once an hour; here each request is looked
at when it changes, at start (the informer's first list: a cleaner that
was down catches up) and again when it next becomes due (`sync` returns
the seconds until then, at most an hour: the hourly pass). An approved request with no
certificate yet is never deleted by age (as Kubernetes: the signer may
still issue it). Times come from the controller's clock.
"""

from __future__ import annotations

import base64
import binascii
import logging
from typing import Any

from controlplane.api import csr
from controlplane.client import errors
from controlplane.client.interface import DeleteOptions
from controlplane.controllers.base import Controller, ControllerContext
from machinery import rfc3339, x509read

log = logging.getLogger(__name__)

KIND = "CertificateSigningRequest"
POLLING_INTERVAL = 3600.0
APPROVED_EXPIRATION = 3600.0
DENIED_EXPIRATION = 3600.0
PENDING_EXPIRATION = 24 * 3600.0


def certificate_not_after(obj: Any) -> float | None:
    """NotAfter of the issued certificate (first PEM block), as epoch seconds."""
    status = obj.get("status") if isinstance(obj, dict) else None
    text = status.get("certificate") if isinstance(status, dict) else None
    if not isinstance(text, str) or not text:
        return None
    try:
        return x509read.not_after(base64.b64decode(text, validate=True)).timestamp()
    except (binascii.Error, ValueError):
        return None


def due(obj: Any) -> tuple[float | None, str]:
    """(when the request is to be deleted, why), or (None, "") never."""
    conds = csr.conditions(obj)
    issued = certificate_not_after(obj)
    status = obj.get("status") if isinstance(obj, dict) else None
    has_cert = isinstance(status, dict) and bool(status.get("certificate"))
    when: list[tuple[float, str]] = []
    for c in conds:
        updated = rfc3339.parse_time(c.get("lastUpdateTime"))
        kind = c.get("type")
        if kind == csr.APPROVED and has_cert:
            if updated is not None:
                when.append((updated + APPROVED_EXPIRATION, "approved and issued"))
            if issued is not None:
                when.append((issued, "its certificate expired"))
        elif kind in (csr.DENIED, csr.FAILED) and updated is not None:
            reason = "denied" if kind == csr.DENIED else "failed"
            when.append((updated + DENIED_EXPIRATION, reason))
    if not conds:
        created = rfc3339.parse_time((obj.get("metadata") or {}).get("creationTimestamp"))
        if created is not None:
            when.append((created + PENDING_EXPIRATION, "pending and unhandled"))
    if not when:
        return None, ""
    return min(when)


class CsrCleanerController(Controller):
    name = "csrcleaner"
    default_workers = 1

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.requests = self.watch_primary(KIND)

    def sync(self, key: str) -> float | None:
        obj = self.requests.store.get(key)
        if obj is None:
            return None
        when, why = due(obj)
        now = self.clock.now()
        if when is None:
            return POLLING_INTERVAL
        if when > now:
            return min(when - now, POLLING_INTERVAL)
        uid = (obj.get("metadata") or {}).get("uid")
        try:
            self.client.delete(KIND, key, options=DeleteOptions(precondition_uid=uid))
            log.info("csrcleaner: deleted CSR %s: %s", key, why)
        except errors.NotFound:
            pass
        except errors.Conflict:  # another request of that name: look at it afresh
            return 0.0
        return None


def init(ctx: ControllerContext) -> Controller:
    return CsrCleanerController(ctx)
