"""Lists: their scope (kind, namespace, selectors, authorization), pages read
from one snapshot, and the continue tokens of limited lists."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator
from dataclasses import dataclass

from controlplane.api.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from controlplane.apiserver.auth import SYSTEM, Identity
from controlplane.apiserver.codec import Object, Stored, decode, kind_info, list_prefix
from controlplane.apiserver.registry_base import RegistryBase
from controlplane.client.errors import Gone, Invalid, Unavailable
from controlplane.storage.interface import Compacted, Store, StoreUnavailable


@dataclass(frozen=True)
class ListResult:
    items: list[Stored]
    resource_version: int
    continue_token: str = ""


@dataclass(frozen=True)
class Selectors:
    labels: LabelSelector
    fields: FieldSelector

    @staticmethod
    def parse(label_selector: str, field_selector: str) -> Selectors:
        try:
            return Selectors(
                parse_label_selector(label_selector), parse_field_selector(field_selector)
            )
        except SelectorError as err:
            raise Invalid(f"selector: {err}") from err

    def empty(self) -> bool:
        return self.labels.empty() and self.fields.empty()

    def matches(self, obj: Object) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return self.labels.matches(labels) and self.fields.matches(obj)


def list_objects(
    base: RegistryBase,
    kind: str,
    namespace: str | None = None,
    label_selector: str = "",
    field_selector: str = "",
    limit: int = 0,
    continue_token: str = "",
    identity: Identity = SYSTEM,
) -> ListResult:
    scope = _list_scope(base, kind, namespace, label_selector, field_selector, identity)
    if scope is None:
        return ListResult([], base.store.current_revision())
    prefix, selectors = scope
    start_after, at_rev = "", 0
    if continue_token:
        start_after, at_rev = decode_continue(continue_token, prefix)
    if limit < 0:
        raise Invalid("limit: must be >= 0")
    items: list[Stored] = []
    chunk = max(limit, 500) if limit else 0
    rev = at_rev
    while True:
        try:
            page = base.store.range(prefix, start_after, chunk, at_rev)
        except Compacted as err:
            raise Gone(
                "the continue token is too old (history compacted): relist without it"
            ) from err
        except StoreUnavailable as err:
            raise Unavailable(str(err)) from err
        rev = rev or page.rev
        at_rev = at_rev or (page.rev if _consistent_pages(base.store) else 0)
        for kv in page.items:
            if not selectors.empty() and not selectors.matches(decode(kv.value)):
                start_after = kv.key
                continue
            items.append((kv.value, kv.mod_rev))
            start_after = kv.key
            if limit and len(items) >= limit:
                more = kv is not page.items[-1] or page.more
                token = encode_continue(kv.key, rev) if more else ""
                return ListResult(items, rev, token)
        if not page.more:
            return ListResult(items, rev)


def list_pages(
    base: RegistryBase,
    kind: str,
    namespace: str | None = None,
    label_selector: str = "",
    field_selector: str = "",
    identity: Identity = SYSTEM,
    page: int = 1000,
) -> Iterator[ListResult]:
    """The whole list (no limit), read from one snapshot and produced page by
    page as the caller consumes it, so sending starts before reading ends.
    Checks (kind, scope, authorization, selectors) run before the first page."""
    scope = _list_scope(base, kind, namespace, label_selector, field_selector, identity)
    if scope is None:
        return iter([ListResult([], base.store.current_revision())])
    return _pages(base.store, *scope, page)


def _list_scope(
    base: RegistryBase,
    kind: str,
    namespace: str | None,
    label_selector: str,
    field_selector: str,
    identity: Identity,
) -> tuple[str, Selectors] | None:
    """The key prefix and selectors of a List, checked and authorized; None
    when the selectors rule out every object (another namespace's field)."""
    info = kind_info(kind)
    base.check_stored(info)
    ns = namespace or "" if info.namespaced else ""
    if namespace and not info.namespaced:
        raise Invalid(f"metadata.namespace: not allowed: {info.kind} is cluster-scoped")
    selectors = Selectors.parse(label_selector, field_selector)
    base.authorizer.authorize(
        identity, "list", info, ns, "", fields=selectors.fields, labels=selectors.labels
    )
    field_ns = selectors.fields.value_of("metadata.namespace")
    if field_ns is not None and info.namespaced:
        if ns and field_ns != ns:
            return None
        ns = field_ns
    return list_prefix(info, ns), selectors


def _pages(store: Store, prefix: str, selectors: Selectors, page: int) -> Iterator[ListResult]:
    scan = store.scan(prefix, page)
    try:
        for chunk in scan:
            items = chunk.items
            if not selectors.empty():
                items = [item for item in items if selectors.matches(decode(item[0]))]
            yield ListResult(items, chunk.rev)
    except Compacted as err:
        raise Gone("the list's snapshot was compacted while it was read: relist") from err
    except StoreUnavailable as err:
        raise Unavailable(str(err)) from err
    finally:
        close = getattr(scan, "close", None)
        if close is not None:
            close()


def _consistent_pages(store: Store) -> bool:
    """Whether the store can read later pages at the first page's revision."""
    return bool(getattr(store, "snapshot_reads", False))


def encode_continue(key: str, rev: int) -> str:
    raw = json.dumps({"k": key, "rv": rev}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode()


def decode_continue(token: str, prefix: str) -> tuple[str, int]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        key, rev = str(data["k"]), int(data["rv"])
    except (ValueError, KeyError, TypeError, binascii.Error) as err:
        raise Invalid("continue: not a valid continue token") from err
    if not key.startswith(prefix):
        raise Invalid("continue: token does not belong to this list")
    return key, rev
