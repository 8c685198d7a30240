"""What the CSI kinds share: the rule for a CSI driver's name
(Kubernetes' ValidateCSIDriverName) and the package of their types."""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import DNS_SUBDOMAIN_MESSAGE, Errors
from controlplane.api.dnsnames import is_dns_subdomain

STORAGE = "io.k8s.api.storage.v1"


def driver_name(e: Errors, path: str, value: Any) -> None:
    """Required, at most 63 characters, a DNS subdomain once lowercased."""
    if not isinstance(value, str) or not value:
        e.required(path)
        return
    if len(value) > 63:
        e.add(path, "Too long: may not be more than 63 bytes")
    if not is_dns_subdomain(value.lower()):
        e.invalid(path, value, DNS_SUBDOMAIN_MESSAGE)
