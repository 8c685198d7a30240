"""Controller history: the ControllerRevisions DaemonSets and StatefulSets
keep, as Kubernetes' pkg/controller/history and the two controllers'
history code do it.

A revision snapshots one distinct pod template: `data` is the strategic
merge patch that puts it back (`{"spec": {"template": {..., "$patch":
"replace"}}}`, what `kubectl rollout undo` sends), `revision` a number
that grows with each new template, labels the template's plus
`controller-revision-hash`, the owner as controlling ownerReference (the
garbage collector removes the history with its owner). Returning to an
old template reuses its revision and moves it to the top number. Old
revisions beyond `revisionHistoryLimit` that no live pod uses are deleted,
oldest first.

Pure functions first (the patch, equality, numbering, pruning), then
`History`: the reads and writes one controller makes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from controlplane.client import errors
from controlplane.client.informer import SharedInformer
from controlplane.client.interface import ApiClient, Object
from controlplane.controllers import podutil, rollout
from controlplane.controllers.base import Controller
from controlplane.controllers.refmanager import ControllerRefManager

KIND = "ControllerRevision"
HASH_LABEL = "controller-revision-hash"
_SAFE = "bcdfghjklmnpqrstvwxz2456789"


def patch_of(owner: Mapping[str, Any]) -> Object:
    """The revision data of an owner: a patch replacing spec.template."""
    template = rollout.canonical_template(podutil.spec(owner).get("template") or {})
    data: Object = {"spec": {"template": {**template, "$patch": "replace"}}}
    # Keys in Go's map order (sorted), as the controllers' json.Marshal writes them.
    sorted_data: Object = json.loads(json.dumps(data, sort_keys=True))
    return sorted_data


def template_of(revision: Mapping[str, Any]) -> Object:
    """The pod template a revision holds (ApplyRevision's result's template)."""
    data = revision.get("data") or {}
    template = dict(((data.get("spec") or {}).get("template")) or {})
    template.pop("$patch", None)
    return rollout.canonical_template(template)


def data_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Do two revisions' data hold the same template?"""
    return _canonical(a) == _canonical(b)


def _canonical(revision_data: Mapping[str, Any]) -> str:
    return json.dumps(template_of({"data": revision_data}), sort_keys=True, separators=(",", ":"))


def hash_data(data: Mapping[str, Any], collision_count: int | None = None) -> str:
    """HashControllerRevision: FNV-1 32 over the data (and the collision
    count's decimal), SafeEncodeString'd."""
    raw = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    if collision_count is not None:
        raw += str(collision_count).encode()
    h = 0x811C9DC5
    for b in raw:
        h = (h * 0x01000193) & 0xFFFFFFFF
        h ^= b
    return "".join(_SAFE[c % len(_SAFE)] for c in str(h).encode())


def revision_name(owner_name: str, hash_: str) -> str:
    """ControllerRevisionName: the owner's name (cut to 223) and the hash."""
    return f"{owner_name[:223]}-{hash_}"


def number(revision: Mapping[str, Any]) -> int:
    value = revision.get("revision")
    return value if isinstance(value, int) else 0


def sort_revisions(revisions: Iterable[Object]) -> list[Object]:
    """By revision number, then creation time, then name (Kubernetes' byRevision)."""
    return sorted(
        revisions,
        key=lambda r: (
            number(r),
            podutil.meta(r).get("creationTimestamp") or "",
            podutil.name_of(r),
        ),
    )


def next_number(revisions: Iterable[Object]) -> int:
    return max((number(r) for r in revisions), default=0) + 1


def to_prune(revisions: Iterable[Object], live: set[str], limit: int) -> list[Object]:
    """The revisions to delete: the oldest of those not in `live` (names)
    beyond `limit`."""
    history = [r for r in sort_revisions(revisions) if podutil.name_of(r) not in live]
    excess = len(history) - max(0, limit)
    return history[:excess] if excess > 0 else []


def new_revision(
    owner: Object, data: Object, revision: int, name: str, hash_: str, annotations: bool
) -> Object:
    template_labels = ((podutil.spec(owner).get("template") or {}).get("metadata") or {}).get(
        "labels"
    ) or {}
    meta: Object = {
        "name": name,
        "namespace": podutil.namespace_of(owner),
        "labels": {**template_labels, HASH_LABEL: hash_},
        "ownerReferences": [podutil.owner_ref(owner)],
    }
    owner_annotations = podutil.meta(owner).get("annotations") or {}
    if annotations and owner_annotations:
        meta["annotations"] = dict(owner_annotations)
    return {
        "apiVersion": "apps/v1",
        "kind": KIND,
        "metadata": meta,
        "data": data,
        "revision": revision,
    }


class Collision(errors.Conflict):
    """A revision of that name holds another template: the owner's
    status.collisionCount goes up and the sync retries."""


def watched(controller: Controller, owner_kind: str) -> History:
    """The History of `controller`'s owners over a revisions informer it
    watches, where a deleted revision queues its owner."""
    informer = controller.watch(KIND)

    def gone(revision: Object) -> None:
        ref = podutil.controller_ref(revision)
        if ref is not None and ref.get("kind") == owner_kind:
            controller.enqueue_key(f"{podutil.namespace_of(revision)}/{ref.get('name')}")

    informer.add_event_handler(on_delete=gone)
    return History(controller.client, informer, owner_kind)


class History:
    """One controller's reads and writes of its owners' revisions."""

    def __init__(self, client: ApiClient, informer: SharedInformer, owner_kind: str) -> None:
        self.client = client
        self.informer = informer
        self.refs = ControllerRefManager(client, owner_kind, KIND)

    def owned(self, owner: Object) -> list[Object]:
        """The owner's revisions, sorted, matching orphans adopted and
        revisions that stopped matching released (ClaimControllerRevisions)."""
        ns = podutil.namespace_of(owner)
        uid = podutil.uid_of(owner)
        selector = podutil.selector_of(owner)
        mine: list[Object] = []
        orphans: list[Object] = []
        for r in self.informer.store.list(ns):
            ref = podutil.controller_ref(r)
            if ref is None:
                orphans.append(r)
            elif ref.get("uid") == uid:
                mine.append(r)
        claimed = self.refs.claim(
            owner,
            mine,
            [] if selector.empty() else orphans,
            lambda r: selector.matches(podutil.labels_of(r)),
        )
        return sort_revisions(claimed)

    def create(self, revision: Object) -> Object:
        """Create a revision; one of that name already there with equal data
        is taken as it is (a retry), with other data it is a Collision."""
        ns = podutil.namespace_of(revision)
        try:
            return self.client.create(KIND, revision, ns)
        except errors.AlreadyExists:
            existing = self.client.get(KIND, podutil.name_of(revision), ns)
            ref = podutil.controller_ref(existing)
            owner_uid = revision["metadata"]["ownerReferences"][0]["uid"]
            if (
                ref is not None
                and ref.get("uid") == owner_uid
                and data_equal(existing.get("data") or {}, revision["data"])
            ):
                return existing
            raise Collision(
                f"controllerrevisions.apps {podutil.name_of(revision)!r} already exists "
                "with other data (hash collision)"
            ) from None

    def renumber(self, revision: Object, to: int) -> Object:
        """Move a revision to another number (a template returned to)."""
        body = {
            "revision": to,
            "metadata": {"resourceVersion": podutil.meta(revision).get("resourceVersion")},
        }
        return self.client.patch(
            KIND, podutil.name_of(revision), body, podutil.namespace_of(revision)
        )

    def delete(self, revisions: Iterable[Object]) -> None:
        for r in revisions:
            try:
                self.client.delete(KIND, podutil.name_of(r), podutil.namespace_of(r))
            except errors.NotFound:
                continue
