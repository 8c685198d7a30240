"""Adopting and releasing owned objects: client-go's ControllerRefManager, for every controller.

`claim(owner, controlled, orphans, matches)` returns what `owner` controls
after the claim: objects it controls that still `match` are kept, those that
stopped matching are released (its ownerReference removed) unless the owner
is being deleted, and orphans (no controller reference) that match are
adopted unless the owner is being deleted.

Adoption re-reads the owner live first (never adopt for an owner that is gone
or being deleted, whatever a stale cache says) and writes the new
ownerReferences with the object's resourceVersion as a precondition, so a
concurrent adoption by another controller loses cleanly (Conflict) instead
of leaving two controllers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from controlplane.client import errors
from controlplane.client.interface import ApiClient, Object
from controlplane.controllers import podutil


class ControllerRefManager:
    def __init__(self, client: ApiClient, owner_kind: str, owned_kind: str) -> None:
        self.client = client
        self.owner_kind = owner_kind  # the kind key ("ReplicaSet", "Job.batch.volcano.sh")
        self.owned_kind = owned_kind

    def claim(
        self,
        owner: Object,
        controlled: Iterable[Object],
        orphans: Iterable[Object],
        matches: Callable[[Object], bool],
    ) -> list[Object]:
        uid = podutil.uid_of(owner)
        ns = podutil.namespace_of(owner)
        deleting = podutil.is_deleting(owner)
        owned: list[Object] = []
        for obj in controlled:
            if podutil.namespace_of(obj) != ns:
                continue
            if matches(obj):
                owned.append(obj)
            elif not deleting:
                self.release(obj, uid)
        if not deleting:
            live: Object | None = None
            for obj in orphans:
                if podutil.is_deleting(obj) or podutil.controller_ref(obj) is not None:
                    continue
                if not matches(obj):
                    continue
                if live is None:
                    live = self._live(owner)
                    if live is None:
                        break
                adopted = self.adopt(owner, obj)
                if adopted is not None:
                    owned.append(adopted)
        return owned

    def _live(self, owner: Object) -> Object | None:
        try:
            fresh = self.client.get(
                self.owner_kind, podutil.name_of(owner), podutil.namespace_of(owner)
            )
        except errors.NotFound:
            return None
        if podutil.uid_of(fresh) != podutil.uid_of(owner) or podutil.is_deleting(fresh):
            return None
        return fresh

    def adopt(self, owner: Object, obj: Object) -> Object | None:
        """Add `owner` as the controller of `obj` (resourceVersion precondition)."""
        refs = [*list(podutil.meta(obj).get("ownerReferences") or []), podutil.owner_ref(owner)]
        try:
            return self.client.patch(
                self.owned_kind,
                podutil.name_of(obj),
                {
                    "metadata": {
                        "ownerReferences": refs,
                        "resourceVersion": podutil.meta(obj).get("resourceVersion"),
                    }
                },
                podutil.namespace_of(obj),
            )
        except (errors.NotFound, errors.Conflict):
            return None

    def release(self, obj: Object, uid: str) -> None:
        """Remove the owner `uid`'s reference from `obj`."""
        refs = [r for r in podutil.meta(obj).get("ownerReferences") or [] if r.get("uid") != uid]
        try:
            self.client.patch(
                self.owned_kind,
                podutil.name_of(obj),
                {"metadata": {"ownerReferences": refs}},
                podutil.namespace_of(obj),
            )
        except errors.NotFound:
            pass
