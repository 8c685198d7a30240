"""What every registry verb shares: the store, the authorizer, the clock,
namespace rules, reads, validation and a small read cache.

`Registry` (registry.py) builds the verbs on this; deletion, listing and the
subresources take it as their narrow view of the registry.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import Any

from controlplane.api import validation
from controlplane.api.kinds import KindInfo, by_kind
from controlplane.apiserver.admission_context import Webhooks
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.authz import Authorizer, attributes
from controlplane.apiserver.codec import ROOT, Object, decode, meta_of, object_key
from controlplane.client.errors import Conflict, Forbidden, Invalid, NotFound, Unavailable
from controlplane.storage.interface import KeyNotFound, Store, StoreUnavailable
from machinery.rfc3339 import format_datetime

MAX_RETRIES = 16


def conflict(info: KindInfo, name: str, current: int) -> Conflict:
    return Conflict(
        f'Operation cannot be fulfilled on {info.resource} "{name}": the object has been '
        f"modified; please apply your changes to the latest version and try again "
        f"(current resourceVersion {current})"
    )


def too_many_writers(info: KindInfo, name: str) -> Conflict:
    """A Conflict the same request may pass if retried (it carries retry
    advice), unlike one refused because of what the object is."""
    return Conflict(
        f'{info.resource} "{name}": too many concurrent writers, try again', retry_after=1
    )


def invalid(info: KindInfo, name: str, problems: list[str]) -> Invalid:
    """Kubernetes' NewInvalid: `Deployment.apps "web" is invalid: <problem>`
    (several problems in brackets, comma-separated), details naming the
    kind, its group and the object, a cause per problem."""
    group = info.group
    qualified = f"{info.kind}.{group}" if group else info.kind
    text = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
    err = Invalid(f'{qualified} "{name}" is invalid: {text}',
                  details={"name": name, "group": group, "kind": info.kind})  # fmt: skip
    err.causes = list(problems)  # type: ignore[attr-defined]  # "path: problem" each
    return err


class RegistryBase:
    """See the module docstring."""

    def __init__(
        self,
        store: Store,
        now: Callable[[], datetime.datetime] | None = None,
        authorizer: Authorizer | None = None,
    ) -> None:
        self.store = store
        # Asked on every read and write; the default knows no node graph.
        self.authorizer = authorizer or Authorizer()
        self._now = now or (lambda: datetime.datetime.now(datetime.UTC))
        self._read_cache: dict[tuple[str, str], tuple[int, Any]] = {}
        self._stamp: tuple[int, str] = (-1, "")  # the last timestamp made, by its second
        # Admission webhooks (webhooks/dispatcher.py), when the server calls any.
        self.webhooks: Webhooks | None = None

    def timestamp(self, offset_seconds: int = 0) -> str:
        moment = self._now()
        second = int(moment.timestamp()) + offset_seconds
        cached = self._stamp
        if cached[0] == second:
            return cached[1]
        text = format_datetime(moment + datetime.timedelta(seconds=offset_seconds))
        self._stamp = (second, text)
        return text

    # -- helpers ------------------------------------------------------------------

    def authorize_request(
        self, identity: Identity, verb: str, info: KindInfo, namespace: str, name: str
    ) -> bool:
        """Authorize from the request alone, before the object is read and
        before any admission rule, precondition or existence check speaks (as
        Kubernetes authorizes in its filter chain, before the handler). True
        when that decided it; False for a node, whose authorizer needs the
        stored object: the caller authorizes again once it has read it."""
        if identity.node is not None:
            return False
        self.authorizer.authorize(identity, verb, info, namespace, name)
        return True

    def request_allowed_now(
        self, identity: Identity, verb: str, info: KindInfo, namespace: str, name: str
    ) -> bool:
        """Whether authorize_request passes without waiting for anything: a
        node's request (authorized later, with the object), or one RBAC allows
        as its index stands (a dictionary lookup; the event loop may ask).
        False only means: call authorize_request, off the event loop, where a
        refusal first waits for the indexes to catch up."""
        if identity.node is not None:
            return True
        return self.authorizer.allowed(identity, attributes(verb, info, namespace, name))

    def namespace_of(self, info: KindInfo, requested: str | None, obj: Object | None) -> str:
        meta_ns = ""
        if obj is not None:
            meta_ns = str(meta_of(obj).get("namespace") or "")
        if not info.namespaced:
            if requested or meta_ns:
                raise Invalid(f"metadata.namespace: not allowed: {info.kind} is cluster-scoped")
            return ""
        if requested and meta_ns and requested != meta_ns:
            raise Invalid(
                f"metadata.namespace: {meta_ns!r} does not match the namespace of the request "
                f"({requested!r})"
            )
        return requested or meta_ns or "default"

    def read(self, info: KindInfo, namespace: str, name: str) -> tuple[Object, int]:
        try:
            kv = self.store.get(object_key(info, namespace, name))
        except KeyNotFound as err:
            raise NotFound(f'{info.resource} "{name}" not found') from err
        except StoreUnavailable as err:
            raise Unavailable(str(err)) from err
        return decode(kv.value), kv.mod_rev

    def validate(
        self, info: KindInfo, obj: Object, old: Object | None, found: Sequence[str] = ()
    ) -> None:
        """Invalid with every problem of obj (and those already `found`)."""
        problems = [*validation.validate(info.key, obj, old), *found]
        if problems:
            name = meta_of(obj).get("name") or meta_of(obj).get("generateName") or ""
            err = invalid(info, str(name), problems)
            err.name = str(name)  # type: ignore[attr-defined]  # a create's URL has none
            raise err

    def check_namespace_open(self, info: KindInfo, namespace: str) -> None:
        if not info.namespaced:
            return
        ns = self.cached(
            f"{ROOT}namespaces/", namespace, lambda: self.read_or_none("Namespace", namespace)
        )
        if ns is None:
            raise NotFound(f'namespaces "{namespace}" not found')
        if (ns.get("metadata") or {}).get("deletionTimestamp"):
            raise Forbidden(
                f"unable to create new content in namespace {namespace} "
                "because it is being terminated"
            )

    def read_or_none(self, kind: str, name: str) -> Object | None:
        try:
            return self.read(by_kind(kind), "", name)[0]
        except NotFound:
            return None

    def cached(self, prefix: str, name: str, load: Callable[[], Any]) -> Any:
        """load(), or a copy kept from an earlier load when nothing under prefix
        has been written since (stores that can tell: `prefix_revision`).

        What it returns is shared: callers read it and never change it.
        """
        stamp_of = getattr(self.store, "prefix_revision", None)
        if stamp_of is None:
            return load()
        stamp = stamp_of(prefix)  # before loading: a newer load is only ever re-read
        key = (prefix, name)
        hit = self._read_cache.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        value = load()
        if len(self._read_cache) >= 4096:
            self._read_cache.clear()
        self._read_cache[key] = (stamp, value)
        return value

    @staticmethod
    def check_stored(info: KindInfo) -> None:
        if info.create_only:
            raise Invalid(f"{info.resource} support create only: they are answered, never stored")
