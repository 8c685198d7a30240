"""Pod groups as the scheduler sees them: the PodGroup objects and which pods name each."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


class PodGroups:
    def __init__(self) -> None:
        self.objects: dict[str, Obj] = {}  # "namespace/name" -> PodGroup
        self.members: dict[str, set[str]] = {}  # "namespace/name" -> pod keys

    def get(self, key: str) -> Obj | None:
        return self.objects.get(key)

    def members_of(self, key: str) -> set[str]:
        return self.members.get(key, set())

    def join(self, group: str, pod: str) -> None:
        self.members.setdefault(group, set()).add(pod)

    def leave(self, group: str, pod: str) -> None:
        self.members.get(group, set()).discard(pod)

    def put(self, group: Obj, deleted: bool = False) -> None:
        meta = group["metadata"]
        key = f"{meta.get('namespace') or 'default'}/{meta['name']}"
        if deleted:
            self.objects.pop(key, None)
        else:
            self.objects[key] = group
