"""Which lists of each kind merge, and by which key, as strategic merge patch
and server-side apply read them.

The built-in kinds' facts are their definitions' `patch_meta`
(controlplane/api/kinds/; Kubernetes' `patchStrategy` and `patchMergeKey`,
published in the OpenAPI document as `x-kubernetes-patch-strategy` and
`x-kubernetes-patch-merge-key`); a kind without them takes JSON merge patch
semantics. Custom kinds' list facts come from their CRD schemas'
`x-kubernetes-list-type` (controlplane/api/crd.py records them with
`set_custom`): server-side apply merges those lists, strategic merge patch
stays refused for them, as in Kubernetes.
"""

from __future__ import annotations

from collections.abc import Mapping

from controlplane.api import kinds
from controlplane.api.kinds.definition import FieldMeta

__all__ = ["FieldMeta", "field_meta", "set_custom", "supports", "table"]

# Custom kinds' list facts, from their CRD schemas' x-kubernetes-list-type
# (server-side apply merges those lists; strategic merge patch stays refused).
_custom: dict[str, dict[str, FieldMeta]] = {}


def set_custom(kind: str, facts: dict[str, FieldMeta]) -> None:
    """Record (or, with an empty table, forget) a custom kind's list facts."""
    if facts:
        _custom[kind] = dict(facts)
    else:
        _custom.pop(kind, None)


def table(kind: str) -> Mapping[str, FieldMeta] | None:
    """The built-in kind's facts by path; None for a kind without them."""
    definition = kinds.find(kind)
    return definition.patch_meta if definition is not None else None


def supports(kind: str) -> bool:
    """Whether `kind` has strategic merge patch facts (the built-in kinds).
    Kubernetes refuses strategic merge patch for custom resources (415)."""
    return table(kind) is not None


def field_meta(kind: str, path: str) -> FieldMeta | None:
    """The merge facts of the field at `path` of `kind`, None when atomic/plain."""
    facts = table(kind)
    if facts is None:
        facts = _custom.get(kind, {})
    return facts.get(path)
