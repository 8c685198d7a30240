"""The API client contract shared by every consumer of the control plane.

Objects travel as plain dicts in Kubernetes JSON shape (apiVersion, kind,
metadata, spec, status). `kind` arguments are the Kind name ("Pod",
"Deployment"). Namespaced kinds take a namespace; cluster-scoped kinds
(Node, Namespace, PriorityClass) take None. Implementations: the gRPC client
(`controlplane.client.apiclient`) and in-memory fakes for unit tests.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, overload, runtime_checkable

from controlplane.client.errors import ApiError

Object = dict[str, Any]

EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]


@dataclass(frozen=True)
class WatchEvent:
    """One change. For BOOKMARK, `object` carries only metadata.resourceVersion."""

    type: EventType
    object: Object


@dataclass(frozen=True)
class ObjectList:
    items: list[Object]
    resource_version: str
    continue_token: str = ""


@dataclass(frozen=True)
class DeleteOptions:
    grace_period_seconds: int | None = None
    # Background (default), Foreground or Orphan, as Kubernetes spells them.
    propagation_policy: str | None = None
    precondition_uid: str | None = None
    precondition_resource_version: str | None = None


@dataclass(frozen=True)
class ListOptions:
    label_selector: str = ""
    field_selector: str = ""
    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""


class Watch(Protocol):
    """An open watch: iterate for events; `stop()` ends it from any thread."""

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def stop(self) -> None: ...


class ApiClient(Protocol):
    def create(self, kind: str, obj: Object, namespace: str | None = None) -> Object: ...

    def get(self, kind: str, name: str, namespace: str | None = None) -> Object: ...

    def list(
        self, kind: str, namespace: str | None = None, options: ListOptions | None = None
    ) -> ObjectList: ...

    def update(self, kind: str, obj: Object) -> Object:
        """Replace spec/metadata; fails with Conflict when
        metadata.resourceVersion is set and stale."""
        ...

    def update_status(self, kind: str, obj: Object) -> Object:
        """Write only .status (the status subresource)."""
        ...

    def patch(
        self,
        kind: str,
        name: str,
        patch: Object,
        namespace: str | None = None,
        subresource: str = "",
    ) -> Object:
        """JSON merge patch (RFC 7386)."""
        ...

    def delete(
        self,
        kind: str,
        name: str,
        namespace: str | None = None,
        options: DeleteOptions | None = None,
    ) -> Object | None:
        """Returns the object still present (deletionTimestamp set, waiting on
        finalizers or grace) or None when it is gone."""
        ...

    def watch(
        self,
        kind: str,
        namespace: str | None = None,
        options: ListOptions | None = None,
        allow_bookmarks: bool = True,
    ) -> Watch:
        """Events after options.resource_version (or from now if empty).
        Raises Gone when that version is older than the retained history."""
        ...

    def get_scale(self, kind: str, name: str, namespace: str) -> Object: ...

    def update_scale(self, kind: str, name: str, namespace: str, replicas: int) -> Object: ...


@runtime_checkable
class BatchCreator(Protocol):
    """A client that creates many objects in one call (the gRPC client; the
    fakes may not: callers fall back to `create`)."""

    @overload
    def create_many(
        self,
        items: Sequence[tuple[str, Object, str | None]],
        *,
        omit_objects: Literal[False] = False,
    ) -> list[Object | ApiError]: ...

    @overload
    def create_many(
        self, items: Sequence[tuple[str, Object, str | None]], *, omit_objects: Literal[True]
    ) -> list[int | ApiError]: ...

    def create_many(
        self, items: Sequence[tuple[str, Object, str | None]], *, omit_objects: bool = False
    ) -> list[Object | ApiError] | list[int | ApiError]:
        """Per item (kind, object, namespace), in order: the created object, or
        with omit_objects only its resourceVersion (for callers that keep
        what they sent: nothing to send back and decode); or the error that
        refused it. Not a transaction."""
        ...
