"""Authorization: may this identity do this verb on this object?

One `Authorizer` per API server, held by the registry, which asks it on
every read and write (both front doors go through the registry, so neither
decides anything itself). The admin (system:masters) may do everything;
a node credential gets the node authorizer and NodeRestriction
(`noderestriction.py`, fed by the `NodeGraph`); any other identity is
refused. Refusals say who, what and why, and change nothing.

Writes are asked twice: before the new object is built (`new` is None:
may this identity touch that object at all?) and once it is (`new` set:
may it make that change?). This module never reads storage itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controlplane.api.kinds import KindInfo
from controlplane.api.selectors import FieldSelector
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.nodegraph import NodeGraph
from controlplane.apiserver.noderestriction import Lookup, refusal
from controlplane.client.errors import Forbidden

CATCH_UP = 0.5  # seconds a refused node request waits for the graph at most


class Authorizer:
    """See the module docstring."""

    def __init__(
        self,
        graph: NodeGraph | None = None,
        lookup: Lookup | None = None,
        revision: Callable[[], int] | None = None,
    ) -> None:
        self.graph = graph
        self.lookup = lookup
        # The store's current revision: a node refused for want of a pod the
        # graph has not seen yet waits (briefly) for it to catch up, so a
        # read right after a write is answered as of that write.
        self.revision = revision

    def authorize(
        self,
        identity: Identity,
        verb: str,
        info: KindInfo,
        namespace: str,
        name: str,
        old: dict[str, Any] | None = None,
        new: dict[str, Any] | None = None,
        fields: FieldSelector | None = None,
    ) -> None:
        """Raise Forbidden unless `identity` may do `verb` on the object."""
        if identity.admin:
            return
        if identity.node is not None:
            args = (identity.node, verb, info, namespace, name, old, new, fields, self.lookup)
            reason = refusal(self.graph, *args)
            if (
                reason is not None
                and self.graph is not None
                and self.revision is not None
                and self.graph.catch_up(self.revision(), CATCH_UP)
            ):
                reason = refusal(self.graph, *args)
            if reason is not None:
                raise Forbidden(reason)
            return
        where = f' in namespace "{namespace}"' if namespace else ""
        what = f"{info.plural} {name!r}" if name else info.plural
        raise Forbidden(f'user "{identity.user}" cannot {verb} {what}{where}')
