"""Label and field selectors for clients: the API server's own parser and matcher.

Parsing and matching live in `controlplane.api.selectors` (pure, shared with
the API server), so an informer's local filtering, the test fakes and
skiffctl select exactly what the server selects. This module adds what
clients need on top, under the names the client library uses:
`Selector` (a parsed label selector), `from_label_selector()` which, as
Kubernetes' LabelSelectorAsSelector, turns a null selector into one that
matches nothing (`Nothing`) and `{}` into one that matches everything, and
`selector_string()` for matchLabels. No I/O, no transport.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.api.selectors import (
    FieldRequirement,
    FieldSelector,
    Requirement,
    SelectorError,
    field_value,
    from_structured,
    parse_field_selector,
    parse_label_selector,
)
from controlplane.api.selectors import LabelSelector as Selector

__all__ = [
    "FieldRequirement",
    "FieldSelector",
    "Nothing",
    "Requirement",
    "Selector",
    "SelectorError",
    "field_value",
    "from_label_selector",
    "parse_field_selector",
    "parse_label_selector",
    "selector_string",
]


class Nothing(Selector):
    """Matches nothing (a null LabelSelector, as Kubernetes treats it)."""

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        return False


def from_label_selector(selector: Mapping[str, Any] | None) -> Selector:
    """A `metav1.LabelSelector` dict as a Selector. None matches nothing, {} everything."""
    if selector is None:
        return Nothing()
    return from_structured(selector)


def selector_string(match_labels: Mapping[str, str]) -> str:
    """`{"app": "web"}` as `app=web`."""
    return ",".join(f"{k}={v}" for k, v in sorted(match_labels.items()))
