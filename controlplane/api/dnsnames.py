"""DNS-1123 names, as Kubernetes validates object names and their parts:
a label (lowercase alphanumerics and '-', alphanumeric at both ends, at most
63 characters) and a subdomain (dot-separated labels, at most 253)."""

from __future__ import annotations

import re

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def is_dns_label(value: str) -> bool:
    return len(value) <= 63 and bool(DNS1123_LABEL.match(value))


def is_dns_subdomain(value: str) -> bool:
    return len(value) <= 253 and bool(DNS1123_SUBDOMAIN.match(value))
