"""The variables of admission CEL (ValidatingAdmissionPolicy and webhook
matchConditions), sorted as the engine keys its environments: a constant
that costs no engine to import."""

from __future__ import annotations

VARIABLES: tuple[str, ...] = tuple(
    sorted(
        ("object", "oldObject", "request", "authorizer", "params", "namespaceObject", "variables")
    )
)
