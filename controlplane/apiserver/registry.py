"""The generic object registry: Kubernetes API semantics over a Store.

Create (generateName, uid, timestamps, defaults, validation, namespace must
exist and not be terminating), Get, List (label/field selectors, limit and
continue), Update with optimistic concurrency, the status subresource
(generation bumps only on spec changes), merge Patch, Delete with grace
period, preconditions and propagation finalizers, and the scale subresource.
Kind-specific admission (pod priority, service IPs, job selectors) is in
`admission.py`.

Objects are stored as compact JSON without metadata.resourceVersion (the
store's mod revision is the resourceVersion). Read paths hand back the stored
bytes untouched with their revision, so a List of many objects is never
decoded and re-encoded unless a selector needs to look inside.

Errors are the client-facing ones (controlplane.client.errors); this module
never touches gRPC.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import datetime
import json
import random
import secrets
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from controlplane.api import defaults, jsoncodec, limits, validation
from controlplane.api.kinds import KindInfo, UnknownKind, by_kind
from controlplane.api.merge_patch import merge_patch
from controlplane.api.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
    selector_string,
)
from controlplane.apiserver.auth import SYSTEM, Identity
from controlplane.apiserver.authz import Authorizer
from controlplane.client.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    Unavailable,
)
from controlplane.client.interface import DeleteOptions
from controlplane.storage.interface import (
    Compacted,
    KeyExists,
    KeyNotFound,
    RevisionMismatch,
    StorageError,
    Store,
    StoreUnavailable,
)

Object = dict[str, Any]
Stored = tuple[bytes, int]  # (JSON without resourceVersion, resourceVersion)

ROOT = "/registry/"
PROTECTED_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
MAX_RETRIES = 16
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_NOT_SPEC = frozenset({"apiVersion", "kind", "metadata", "status"})


@dataclass(frozen=True)
class PodBinding:
    """One pods/binding request: put pod namespace/name on node (Kubernetes' Binding)."""

    namespace: str
    name: str
    node: str
    uid: str = ""
    annotations: dict[str, str] | None = None


_HEAD = ("apiVersion", "kind", "metadata")
_META = b'"metadata":{'


def encode(obj: Object) -> bytes:
    """The stored form: without resourceVersion, and with apiVersion, kind and
    metadata first, so `with_version` finds the object's own metadata at once."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "resourceVersion" in meta:
        meta = dict(meta)
        del meta["resourceVersion"]
        obj = {**obj, "metadata": meta}
    head = [k for k in _HEAD if k in obj]
    if list(obj)[: len(head)] != head:
        obj = {**{k: obj[k] for k in head}, **{k: v for k, v in obj.items() if k not in _HEAD}}
    data = jsoncodec.dumps(obj)
    limits.check_integers(data, obj)
    return data


def with_version(data: bytes, rev: int) -> bytes:
    """The stored JSON with metadata.resourceVersion written in, without decoding
    it. Only apiVersion and kind (strings: no `{` in them) may precede metadata;
    anything else stored takes the slow way."""
    at = data.find(_META)
    if at > 0 and data.find(b"{", 1) == at + len(_META) - 1:
        at += len(_META)
        sep = b"" if data[at : at + 1] == b"}" else b","
        return b'%s"resourceVersion":"%d"%s%s' % (data[:at], rev, sep, data[at:])
    return jsoncodec.dumps(decode(data, rev))


def decode(data: bytes, rev: int | None = None) -> Object:
    obj: Object = jsoncodec.loads(data)
    if rev is not None:
        obj.setdefault("metadata", {})["resourceVersion"] = str(rev)
    return obj


def new_uid() -> str:
    """A random (version 4) UUID string, as str(uuid.uuid4()) but cheaper: from
    the random module (seeded from os.urandom, reseeded in forked children), so
    no system call per uid (a uid must be unique, not secret)."""
    h = f"{random.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


def kind_info(kind: str) -> KindInfo:
    try:
        return by_kind(kind)
    except UnknownKind as err:
        raise Invalid(str(err)) from err


def kind_prefix(info: KindInfo) -> str:
    return f"{ROOT}{info.storage_name}/"


def object_key(info: KindInfo, namespace: str, name: str) -> str:
    if info.namespaced:
        return f"{ROOT}{info.storage_name}/{namespace}/{name}"
    return f"{ROOT}{info.storage_name}/{name}"


def list_prefix(info: KindInfo, namespace: str) -> str:
    if info.namespaced and namespace:
        return f"{ROOT}{info.storage_name}/{namespace}/"
    return kind_prefix(info)


def key_namespace(info: KindInfo, key: str) -> str:
    """The namespace part of a stored key ("" for cluster-scoped kinds)."""
    if not info.namespaced:
        return ""
    return key[len(kind_prefix(info)) :].split("/", 1)[0]


def _rv(value: Any, what: str = "metadata.resourceVersion") -> int:
    try:
        rv = int(str(value))
    except ValueError as err:
        raise Invalid(f"{what}: {value!r} is not a valid resourceVersion") from err
    if rv < 0:
        raise Invalid(f"{what}: must be >= 0")
    return rv


def _spec_part(obj: Object) -> Object:
    return {k: v for k, v in obj.items() if k not in _NOT_SPEC}


def _meta(obj: Object) -> Object:
    meta = obj.get("metadata")
    if meta is None:
        meta = {}
        obj["metadata"] = meta
    if not isinstance(meta, dict):
        raise Invalid("metadata: must be an object")
    return meta


@dataclass(frozen=True)
class ListResult:
    items: list[Stored]
    resource_version: int
    continue_token: str = ""


class _NewObject(NamedTuple):
    """A create checked and filled in, waiting for its write."""

    info: KindInfo
    ns: str
    name: str
    obj: Object
    generate: bool


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


def _conflict(info: KindInfo, name: str, current: int) -> Conflict:
    return Conflict(
        f'Operation cannot be fulfilled on {info.resource} "{name}": the object has been '
        f"modified; please apply your changes to the latest version and try again "
        f"(current resourceVersion {current})"
    )


# Admission hook: (registry, info, obj, old) -> None, may mutate obj, raises API errors.
Admit = Callable[["Registry", KindInfo, Object, Object | None], None]


class Registry:
    """See the module docstring."""

    def __init__(
        self,
        store: Store,
        now: Callable[[], datetime.datetime] | None = None,
        admission: dict[str, Admit] | None = None,
        authorizer: Authorizer | None = None,
    ) -> None:
        self.store = store
        # Asked on every read and write; the default knows no node graph.
        self.authorizer = authorizer or Authorizer()
        # Create-only kinds (reviews): kind -> fills in the answer, never stored.
        self.reviews: dict[str, Callable[[Object, Identity], Object]] = {}
        self._now = now or (lambda: datetime.datetime.now(datetime.UTC))
        self.admission: dict[str, Admit] = dict(admission or {})
        self._read_cache: dict[tuple[str, str], tuple[int, Any]] = {}
        self._stamp: tuple[int, str] = (-1, "")  # the last timestamp made, by its second

    def timestamp(self, offset_seconds: int = 0) -> str:
        moment = self._now()
        second = int(moment.timestamp()) + offset_seconds
        cached = self._stamp
        if cached[0] == second:
            return cached[1]
        text = (moment + datetime.timedelta(seconds=offset_seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
        self._stamp = (second, text)
        return text

    # -- helpers ------------------------------------------------------------------

    def _namespace(self, info: KindInfo, requested: str | None, obj: Object | None) -> str:
        meta_ns = ""
        if obj is not None:
            meta_ns = str(_meta(obj).get("namespace") or "")
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

    def _read(self, info: KindInfo, namespace: str, name: str) -> tuple[Object, int]:
        try:
            kv = self.store.get(object_key(info, namespace, name))
        except KeyNotFound as err:
            raise NotFound(f'{info.resource} "{name}" not found') from err
        except StoreUnavailable as err:
            raise Unavailable(str(err)) from err
        return decode(kv.value), kv.mod_rev

    def _validate(self, info: KindInfo, obj: Object, old: Object | None) -> None:
        problems = validation.validate(info.key, obj, old)
        if problems:
            name = _meta(obj).get("name") or _meta(obj).get("generateName") or ""
            err = Invalid(f'{info.kind} "{name}" is invalid: ' + "; ".join(problems))
            err.causes = list(problems)  # type: ignore[attr-defined]  # "path: problem" each
            raise err

    def _check_namespace_open(self, info: KindInfo, namespace: str) -> None:
        if not info.namespaced:
            return
        ns = self._cached(
            f"{ROOT}namespaces/", namespace, lambda: self._read_or_none("Namespace", namespace)
        )
        if ns is None:
            raise NotFound(f'namespaces "{namespace}" not found')
        if (ns.get("metadata") or {}).get("deletionTimestamp"):
            raise Forbidden(
                f"unable to create new content in namespace {namespace} "
                "because it is being terminated"
            )

    def _read_or_none(self, kind: str, name: str) -> Object | None:
        try:
            return self._read(by_kind(kind), "", name)[0]
        except NotFound:
            return None

    def _cached(self, prefix: str, name: str, load: Callable[[], Any]) -> Any:
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

    def cached_objects(self, kind: str) -> builtins.list[Object]:
        """Every object of a cluster-scoped kind, decoded (PriorityClasses for pod
        admission); shared, read only."""
        info = kind_info(kind)
        return self._cached(  # type: ignore[no-any-return]
            kind_prefix(info), "", lambda: [decode(d, r) for d, r in self.list(kind).items]
        )

    # -- create --------------------------------------------------------------------

    def create(
        self,
        kind: str,
        obj: Object,
        namespace: str | None = None,
        identity: Identity = SYSTEM,
        copy_input: bool = True,
        dry_run: bool = False,
    ) -> Stored:
        """copy_input=False lets the registry use (and change) obj, e.g. a freshly decoded one.
        dry_run: every check and default, nothing stored (revision 0)."""
        info = kind_info(kind)
        if info.create_only:
            return self._review(info, obj, namespace, identity)
        new = self._prepare_create(kind, obj, namespace, identity, copy_input)
        if dry_run:
            return encode(new.obj), 0
        return self._store_new(new)

    def _review(
        self, info: KindInfo, obj: Object, namespace: str | None, identity: Identity
    ) -> Stored:
        """A create-only kind: authorized, answered, never stored (revision 0).
        A TokenRequest is authorized as Kubernetes has it: create on the
        serviceaccounts/token subresource of the account it names."""
        if not isinstance(obj, dict):
            raise Invalid("object: must be a JSON object")
        handler = self.reviews.get(info.kind)
        if handler is None:
            raise NotFound(f"{info.resource} are not served by this server")
        obj = jsoncodec.clone(obj)
        ns = self._namespace(info, namespace, obj)
        meta = _meta(obj)
        if ns:
            meta["namespace"] = ns
        obj["kind"], obj["apiVersion"] = info.kind, info.api_version
        obj.pop("status", None)
        if info.kind == "TokenRequest":
            name = str(meta.get("name") or "")
            self.authorizer.authorize(identity, "create", by_kind("ServiceAccount"), ns, name,
                                      None, obj, subresource="token")  # fmt: skip
        else:
            self.authorizer.authorize(identity, "create", info, ns, "")
        return encode(handler(obj, identity)), 0

    @staticmethod
    def _stored(info: KindInfo) -> None:
        if info.create_only:
            raise Invalid(f"{info.resource} support create only: they are answered, never stored")

    def create_many(
        self, items: Sequence[tuple[str, Object, str | None]], identity: Identity = SYSTEM
    ) -> builtins.list[Stored | ApiError]:
        """Independent creates of (kind, object, namespace), as many create()s would
        do them (the objects are used and changed), but written together so they
        share group commits. Each has its own outcome, in order."""
        outcomes: builtins.list[Stored | ApiError | None] = [None] * len(items)
        ready: builtins.list[tuple[int, _NewObject]] = []
        for i, (kind, obj, namespace) in enumerate(items):
            try:
                ready.append((i, self._prepare_create(kind, obj, namespace, identity, False)))
            except ApiError as err:
                outcomes[i] = err
        datas = [encode(new.obj) for _, new in ready]
        for (i, new), data in zip(ready, datas, strict=True):
            try:
                limits.check_stored(len(data), new.info.resource, new.name)
            except ApiError as err:
                outcomes[i] = err
        kept = [(r, d) for r, d in zip(ready, datas, strict=True) if outcomes[r[0]] is None]
        ready, datas = [r for r, _ in kept], [d for _, d in kept]
        try:
            written = self.store.create_many(
                [(object_key(new.info, new.ns, new.name), data)
                 for (_, new), data in zip(ready, datas, strict=True)]
            )  # fmt: skip
        except StoreUnavailable as err:
            written = [err] * len(ready)
        for (i, new), data, result in zip(ready, datas, written, strict=True):
            if isinstance(result, KeyExists) and new.generate:
                # A generated name taken: try others, one at a time.
                try:
                    outcomes[i] = self._store_new(new._replace(name=self._rename(new)))
                except ApiError as err:
                    outcomes[i] = err
            elif isinstance(result, KeyExists):
                outcomes[i] = AlreadyExists(f'{new.info.resource} "{new.name}" already exists')
            elif isinstance(result, StorageError):
                outcomes[i] = Unavailable(str(result))
            else:
                outcomes[i] = (data, result)
        return [o for o in outcomes if o is not None]

    def _prepare_create(
        self, kind: str, obj: Object, namespace: str | None, identity: Identity, copy_input: bool
    ) -> _NewObject:
        """Everything a create checks and fills in, up to the write."""
        info = kind_info(kind)
        self._stored(info)
        if not isinstance(obj, dict):
            raise Invalid("object: must be a JSON object")
        if copy_input:
            obj = jsoncodec.clone(obj)
        if obj.get("kind") not in (None, "", info.kind):
            raise Invalid(f"kind: {obj.get('kind')!r} does not match the request ({info.kind})")
        obj["kind"] = info.kind
        obj.setdefault("apiVersion", info.api_version)
        ns = self._namespace(info, namespace, obj)
        meta = _meta(obj)
        if ns:
            meta["namespace"] = ns
        for field in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds",
                      "selfLink", "managedFields"):  # fmt: skip
            meta.pop(field, None)
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = self.timestamp()
        meta["generation"] = 1
        generate = bool(not meta.get("name") and meta.get("generateName"))
        if generate:
            meta["name"] = self._generated_name(str(meta["generateName"]))
        if info.has_status and info.kind not in ("Node",):
            obj.pop("status", None)
        name = str(meta.get("name") or "")  # validation refuses a missing one
        self.authorizer.authorize(identity, "create", info, ns, name, None, obj)
        defaults.apply_defaults(info.key, obj)
        self._validate(info, obj, None)
        self._check_namespace_open(info, ns)
        admit = self.admission.get(info.key)
        if admit is not None:
            admit(self, info, obj, None)  # server-made changes: not validated again
        return _NewObject(info, ns, name, obj, generate)

    def _store_new(self, new: _NewObject) -> Stored:
        for attempt in range(8):
            data = encode(new.obj)
            limits.check_stored(len(data), new.info.resource, new.name)
            try:
                rev = self.store.create(object_key(new.info, new.ns, new.name), data)
                return data, rev
            except KeyExists as err:
                if not new.generate or attempt == 7:
                    raise AlreadyExists(f'{new.info.resource} "{new.name}" already exists') from err
                new = new._replace(name=self._rename(new))
            except StoreUnavailable as err:
                raise Unavailable(str(err)) from err
        raise AssertionError("unreachable")

    def _rename(self, new: _NewObject) -> str:
        meta = _meta(new.obj)
        name = self._generated_name(str(meta["generateName"]))
        meta["name"] = name
        return name

    @staticmethod
    def _generated_name(prefix: str) -> str:
        suffix = "".join(secrets.choice(_GENERATE_ALPHABET) for _ in range(5))
        return prefix[: 253 - 5] + suffix

    # -- reads -----------------------------------------------------------------------

    def get(
        self, kind: str, name: str, namespace: str | None = None, identity: Identity = SYSTEM
    ) -> Stored:
        info = kind_info(kind)
        self._stored(info)
        ns = self._namespace(info, namespace, None)
        self.authorizer.authorize(identity, "get", info, ns, name)
        try:
            kv = self.store.get(object_key(info, ns, name))
        except KeyNotFound as err:
            raise NotFound(f'{info.resource} "{name}" not found') from err
        except StoreUnavailable as err:
            raise Unavailable(str(err)) from err
        return kv.value, kv.mod_rev

    def get_object(self, kind: str, name: str, namespace: str | None = None) -> Object:
        data, rev = self.get(kind, name, namespace)
        return decode(data, rev)

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 0,
        continue_token: str = "",
        identity: Identity = SYSTEM,
    ) -> ListResult:
        scope = self._list_scope(kind, namespace, label_selector, field_selector, identity)
        if scope is None:
            return ListResult([], self.store.current_revision())
        prefix, selectors = scope
        start_after, at_rev = "", 0
        if continue_token:
            start_after, at_rev = self._decode_continue(continue_token, prefix)
        if limit < 0:
            raise Invalid("limit: must be >= 0")
        items: list[Stored] = []
        chunk = max(limit, 500) if limit else 0
        rev = at_rev
        while True:
            try:
                page = self.store.range(prefix, start_after, chunk, at_rev)
            except Compacted as err:
                raise Gone(
                    "the continue token is too old (history compacted): relist without it"
                ) from err
            except StoreUnavailable as err:
                raise Unavailable(str(err)) from err
            rev = rev or page.rev
            at_rev = at_rev or (page.rev if self._consistent_pages() else 0)
            for kv in page.items:
                if not selectors.empty() and not selectors.matches(decode(kv.value)):
                    start_after = kv.key
                    continue
                items.append((kv.value, kv.mod_rev))
                start_after = kv.key
                if limit and len(items) >= limit:
                    more = kv is not page.items[-1] or page.more
                    token = self._encode_continue(kv.key, rev) if more else ""
                    return ListResult(items, rev, token)
            if not page.more:
                return ListResult(items, rev)

    def list_pages(
        self,
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
        scope = self._list_scope(kind, namespace, label_selector, field_selector, identity)
        if scope is None:
            return iter([ListResult([], self.store.current_revision())])
        return self._pages(*scope, page)

    def _list_scope(
        self,
        kind: str,
        namespace: str | None,
        label_selector: str,
        field_selector: str,
        identity: Identity,
    ) -> tuple[str, Selectors] | None:
        """The key prefix and selectors of a List, checked and authorized; None
        when the selectors rule out every object (another namespace's field)."""
        info = kind_info(kind)
        self._stored(info)
        ns = namespace or "" if info.namespaced else ""
        if namespace and not info.namespaced:
            raise Invalid(f"metadata.namespace: not allowed: {info.kind} is cluster-scoped")
        selectors = Selectors.parse(label_selector, field_selector)
        self.authorizer.authorize(identity, "list", info, ns, "", fields=selectors.fields)
        field_ns = selectors.fields.value_of("metadata.namespace")
        if field_ns is not None and info.namespaced:
            if ns and field_ns != ns:
                return None
            ns = field_ns
        return list_prefix(info, ns), selectors

    def _pages(self, prefix: str, selectors: Selectors, page: int) -> Iterator[ListResult]:
        scan = self.store.scan(prefix, page)
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

    def _consistent_pages(self) -> bool:
        """Whether the store can read later pages at the first page's revision."""
        return bool(getattr(self.store, "snapshot_reads", False))

    @staticmethod
    def _encode_continue(key: str, rev: int) -> str:
        raw = json.dumps({"k": key, "rv": rev}, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode()

    @staticmethod
    def _decode_continue(token: str, prefix: str) -> tuple[str, int]:
        try:
            data = json.loads(base64.urlsafe_b64decode(token.encode()))
            key, rev = str(data["k"]), int(data["rv"])
        except (ValueError, KeyError, TypeError, binascii.Error) as err:
            raise Invalid("continue: not a valid continue token") from err
        if not key.startswith(prefix):
            raise Invalid("continue: token does not belong to this list")
        return key, rev

    # -- update / status / patch ------------------------------------------------------

    def update(
        self,
        kind: str,
        obj: Object,
        subresource: str = "",
        identity: Identity = SYSTEM,
        copy_input: bool = True,
        dry_run: bool = False,
    ) -> Stored:
        """copy_input=False lets the registry use (and change) obj, e.g. a freshly decoded one."""
        info = kind_info(kind)
        if not isinstance(obj, dict):
            raise Invalid("object: must be a JSON object")
        meta = _meta(obj)
        name = str(meta.get("name") or "")
        if not name:
            raise Invalid("metadata.name: required")
        ns = self._namespace(info, None, obj)
        client_rv = _rv(meta["resourceVersion"]) if meta.get("resourceVersion") else 0
        return self._write_loop(
            info, ns, name, lambda _old: jsoncodec.clone(obj) if copy_input else obj, subresource,
            client_rv, identity, "update", dry_run,
        )  # fmt: skip

    def patch(
        self,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        subresource: str = "",
        identity: Identity = SYSTEM,
        dry_run: bool = False,
    ) -> Stored:
        """A JSON merge patch (RFC 7386)."""
        if not isinstance(patch, dict):
            raise Invalid("patch: a JSON merge patch must be a JSON object")

        def build(old: Object) -> Object:
            merged: Object = merge_patch(old, patch)
            return merged

        return self.patch_with(kind, name, build, namespace, subresource, identity, dry_run)

    def patch_with(
        self,
        kind: str,
        name: str,
        build: Callable[[Object], Object],
        namespace: str | None = None,
        subresource: str = "",
        identity: Identity = SYSTEM,
        dry_run: bool = False,
    ) -> Stored:
        """Any patch, given as `build(old) -> new` (which must not change `old`).

        It runs inside the write loop, on the stored object as read at each
        attempt, so every patch type gets the same validation, admission,
        authorization and conflict handling. A resourceVersion the patch
        result carries (in metadata) is a precondition, as in Kubernetes.
        """
        info = kind_info(kind)
        ns = self._namespace(info, namespace, None)
        return self._write_loop(info, ns, name, build, subresource, -1, identity, "patch", dry_run)

    def _write_loop(
        self,
        info: KindInfo,
        ns: str,
        name: str,
        build: Callable[[Object], Object],
        subresource: str,
        client_rv: int,
        identity: Identity,
        verb: str,
        dry_run: bool = False,
    ) -> Stored:
        """client_rv: the resourceVersion the write must find (0: any); -1: the
        one the built object names, if any (patches)."""
        self._stored(info)
        if subresource not in ("", "status"):
            raise Invalid(f"subresource: {subresource!r} is not supported (use '' or 'status')")
        if subresource == "status" and not info.has_status:
            raise NotFound(f"{info.resource} have no status subresource")
        key = object_key(info, ns, name)
        for _ in range(MAX_RETRIES):
            old, cur_rev = self._read(info, ns, name)
            if client_rv > 0 and client_rv != cur_rev:
                raise _conflict(info, name, cur_rev)
            full_verb = f"{verb}_status" if subresource else verb
            self.authorizer.authorize(identity, full_verb, info, ns, name, old)
            requested = build(old)  # builders never change `old` (merge_patch copies)
            if not isinstance(requested, dict):
                raise Invalid("object: must be a JSON object")
            precondition = client_rv
            if client_rv < 0:
                wanted = _meta(requested).get("resourceVersion")
                precondition = _rv(wanted) if wanted else 0
                if precondition and precondition != cur_rev:
                    raise _conflict(info, name, cur_rev)
            new = self._prepare_update(info, old, requested, subresource)
            if not identity.admin:  # may it make this change (NodeRestriction)?
                self.authorizer.authorize(identity, full_verb, info, ns, name, old, new)
            if new == old or dry_run:
                return encode(new), cur_rev
            new_meta = new["metadata"]
            try:
                held = bool(new_meta.get("finalizers")) or (
                    info.kind == "Namespace" and bool((new.get("spec") or {}).get("finalizers"))
                )
                if (
                    new_meta.get("deletionTimestamp")
                    and not held
                    and not new_meta.get("deletionGracePeriodSeconds")
                ):
                    rev = self.store.delete(key, cur_rev)
                    return encode(new), rev
                data = encode(new)
                limits.check_stored(len(data), info.resource, name)
                return data, self.store.update(key, data, cur_rev)
            except RevisionMismatch as err:
                if precondition > 0:
                    raise _conflict(info, name, err.current) from err
            except KeyNotFound as err:
                raise NotFound(f'{info.resource} "{name}" not found') from err
            except StoreUnavailable as err:
                raise Unavailable(str(err)) from err
        raise Conflict(f'{info.resource} "{name}": too many concurrent writers, try again')

    # -- binding (pods/binding, many per call) ---------------------------------------

    def bind_many(
        self, bindings: Sequence[PodBinding], identity: Identity = SYSTEM
    ) -> builtins.list[Stored | ApiError]:
        """Bind each pod to its node, as Kubernetes' pods/binding subresource does.

        The result of a binding is exactly what a merge patch of spec.nodeName
        and the annotations would store, but a pod that is already assigned to
        another node, or is being deleted, is refused (Conflict) as Kubernetes
        refuses it. Bindings are independent: each gets its stored pod or its
        error, in order. Their writes go to the store together
        (`Store.update_many`), so they share one durable commit.
        """
        results: builtins.list[Stored | ApiError] = [Invalid("binding: not processed")] * len(
            bindings
        )
        pending: builtins.list[tuple[int, str, bytes, int]] = []
        for i, binding in enumerate(bindings):
            try:
                prepared = self._prepare_binding(binding, identity)
            except ApiError as err:
                results[i] = err
                continue
            if isinstance(prepared[0], bytes):
                results[i] = (prepared[0], prepared[1])  # nothing to change
            else:
                key, data, cur_rev = prepared
                pending.append((i, key, data, cur_rev))
        if not pending:
            return results
        try:
            outcomes = self.store.update_many([(k, d, r) for _, k, d, r in pending])
        except StoreUnavailable as err:
            outcomes = [err] * len(pending)
        for (i, _key, data, _rev), outcome in zip(pending, outcomes, strict=True):
            if isinstance(outcome, int):
                results[i] = (data, outcome)
            elif isinstance(outcome, RevisionMismatch):
                results[i] = self._bind_one(bindings[i], identity)  # raced: try again alone
            elif isinstance(outcome, KeyNotFound):
                results[i] = NotFound(f'pods "{bindings[i].name}" not found')
            else:
                results[i] = Unavailable(str(outcome))
        return results

    def _bind_one(self, binding: PodBinding, identity: Identity) -> Stored | ApiError:
        for _ in range(MAX_RETRIES):
            try:
                prepared = self._prepare_binding(binding, identity)
                if isinstance(prepared[0], bytes):
                    return prepared[0], prepared[1]
                key, data, cur_rev = prepared
                return data, self.store.update(key, data, cur_rev)
            except ApiError as err:
                return err
            except RevisionMismatch:
                continue
            except KeyNotFound:
                return NotFound(f'pods "{binding.name}" not found')
            except StoreUnavailable as err:
                return Unavailable(str(err))
        return Conflict(f'pods "{binding.name}": too many concurrent writers, try again')

    def _prepare_binding(
        self, binding: PodBinding, identity: Identity
    ) -> tuple[str, bytes, int] | tuple[bytes, int]:
        """(key, data, expected revision) to write, or (data, revision) when bound already."""
        info = by_kind("Pod")
        if not binding.node:
            raise Invalid("target.name: required")
        if not binding.name:
            raise Invalid("metadata.name: required")
        ns = self._namespace(info, binding.namespace or None, None)
        old, cur_rev = self._read(info, ns, binding.name)
        self.authorizer.authorize(identity, "bind", info, ns, binding.name, old)
        meta = old.get("metadata") or {}
        if binding.uid and binding.uid != meta.get("uid"):
            raise Conflict(
                f"Precondition failed: UID in precondition: {binding.uid}, "
                f"UID in object meta: {meta.get('uid')}"
            )
        if meta.get("deletionTimestamp"):
            raise Conflict(f'pod "{binding.name}" is being deleted, cannot be assigned to a host')
        assigned = (old.get("spec") or {}).get("nodeName")
        if assigned and assigned != binding.node:
            raise Conflict(f'pod "{binding.name}" is already assigned to node "{assigned}"')
        if assigned == binding.node and all(
            (meta.get("annotations") or {}).get(k) == v
            for k, v in (binding.annotations or {}).items()
        ):
            return encode(old), cur_rev
        # What a merge patch of spec.nodeName and the annotations stores, without
        # the full update path: as in Kubernetes' binding storage, only the
        # fields it sets are checked (the rest was validated when written).
        new = jsoncodec.clone(old)
        new_meta = _meta(new)
        new.setdefault("spec", {})["nodeName"] = binding.node
        if binding.annotations:
            annotations = new_meta.get("annotations")
            if not isinstance(annotations, dict):
                annotations = new_meta["annotations"] = {}
            annotations.update(binding.annotations)
            problems = validation.Errors()
            validation.validate_metadata(problems, info, new)
            if problems:
                raise Invalid(f'Pod "{binding.name}" is invalid: ' + "; ".join(problems.items))
        if assigned != binding.node:  # a spec change, as update counts it
            new_meta["generation"] = int(new_meta.get("generation") or 1) + 1
        data = encode(new)
        limits.check_stored(len(data), info.resource, binding.name)
        return object_key(info, ns, binding.name), data, cur_rev

    def _prepare_update(
        self, info: KindInfo, old: Object, requested: Object, subresource: str
    ) -> Object:
        if requested.get("kind") not in (None, "", info.kind):
            raise Invalid(f"kind: {requested.get('kind')!r} does not match {info.kind}")
        old_meta = old.get("metadata") or {}
        req_meta = _meta(requested)
        if req_meta.get("uid") and req_meta.get("uid") != old_meta.get("uid"):
            raise Conflict(
                f"Precondition failed: UID in object meta: {req_meta.get('uid')}, "
                f"UID of the stored object: {old_meta.get('uid')}"
            )
        if subresource == "status":
            new = jsoncodec.clone(old)
            if "status" in requested:
                new["status"] = requested["status"]
            else:
                new.pop("status", None)
            self._validate(info, new, old)
            return new
        new = requested
        new["kind"] = info.kind
        new.setdefault("apiVersion", old.get("apiVersion", info.api_version))
        meta = _meta(new)
        meta.pop("resourceVersion", None)
        for field in ("name", "namespace", "uid", "creationTimestamp", "generateName",
                      "deletionTimestamp", "deletionGracePeriodSeconds"):  # fmt: skip
            if field in old_meta:
                meta[field] = old_meta[field]
            else:
                meta.pop(field, None)
        if info.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        defaults.apply_defaults(info.key, new)
        old_generation = int(old_meta.get("generation") or 1)
        if _spec_part(new) != _spec_part(old):
            meta["generation"] = old_generation + 1
        else:
            meta["generation"] = old_generation
        if old_meta.get("deletionTimestamp"):
            added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
            if added:
                raise Forbidden(
                    f"metadata.finalizers: no new finalizers can be added while "
                    f"{info.kind} is being deleted: {sorted(added)}"
                )
        self._validate(info, new, old)
        admit = self.admission.get(info.key)
        if admit is not None:
            admit(self, info, new, old)
        return new

    # -- delete ------------------------------------------------------------------------

    def delete(
        self,
        kind: str,
        name: str,
        namespace: str | None = None,
        options: DeleteOptions | None = None,
        identity: Identity = SYSTEM,
        dry_run: bool = False,
    ) -> Stored | None:
        """The object as it stays (being deleted), or None when it is gone."""
        info = kind_info(kind)
        self._stored(info)
        options = options or DeleteOptions()
        ns = self._namespace(info, namespace, None)
        policy = options.propagation_policy or "Background"
        if policy not in ("Background", "Foreground", "Orphan"):
            raise Invalid(
                f"propagationPolicy: unsupported value {policy!r}: "
                "supported values: Background, Foreground, Orphan"
            )
        if options.grace_period_seconds is not None and options.grace_period_seconds < 0:
            raise Invalid("gracePeriodSeconds: must be >= 0")
        if info.kind == "Namespace" and name in PROTECTED_NAMESPACES:
            raise Forbidden(f'namespaces "{name}" is forbidden: this namespace may not be deleted')
        key = object_key(info, ns, name)
        for _ in range(MAX_RETRIES):
            old, cur_rev = self._read(info, ns, name)
            meta = old.get("metadata") or {}
            if options.precondition_uid and options.precondition_uid != meta.get("uid"):
                raise Conflict(
                    f"Precondition failed: UID in precondition: {options.precondition_uid}, "
                    f"UID in object meta: {meta.get('uid')}"
                )
            if (
                options.precondition_resource_version
                and _rv(options.precondition_resource_version, "preconditions.resourceVersion")
                != cur_rev
            ):
                raise Conflict(
                    f"Precondition failed: ResourceVersion in precondition: "
                    f"{options.precondition_resource_version}, ResourceVersion in object meta: "
                    f"{cur_rev}"
                )
            self.authorizer.authorize(identity, "delete", info, ns, name, old, None)
            new = self._deletion_state(info, old, options, policy)
            if dry_run:
                return None if new is None else (encode(new), cur_rev)
            try:
                if new is None:
                    self.store.delete(key, cur_rev)
                    return None
                if new == old:
                    return encode(old), cur_rev
                data = encode(new)
                return data, self.store.update(key, data, cur_rev)
            except RevisionMismatch:
                continue
            except KeyNotFound as err:
                raise NotFound(f'{info.resource} "{name}" not found') from err
            except StoreUnavailable as err:
                raise Unavailable(str(err)) from err
        raise Conflict(f'{info.resource} "{name}": too many concurrent writers, try again')

    def _grace_period(self, info: KindInfo, obj: Object, options: DeleteOptions) -> int:
        if info.kind != "Pod":
            return 0
        spec = obj.get("spec") or {}
        phase = (obj.get("status") or {}).get("phase")
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
            return 0
        if options.grace_period_seconds is not None:
            return options.grace_period_seconds
        return int(spec.get("terminationGracePeriodSeconds", 30))

    def _deletion_state(
        self, info: KindInfo, old: Object, options: DeleteOptions, policy: str
    ) -> Object | None:
        """The object as it must be stored after this delete, or None to remove it now.

        Only metadata (and a namespace's status) change: the rest is shared
        with `old`, never deep-copied, so an object too deeply nested to copy
        (stored before the depth limit) can still be deleted."""
        new = dict(old)
        meta = new["metadata"] = dict(_meta(old))
        if info.kind == "Namespace":
            new["status"] = dict(old.get("status") or {})
        finalizers: list[str] = list(meta.get("finalizers") or [])
        if info.kind == "Namespace":
            if not meta.get("deletionTimestamp"):
                meta["deletionTimestamp"] = self.timestamp()
                meta["deletionGracePeriodSeconds"] = 0
                new.setdefault("status", {})["phase"] = "Terminating"
            return new
        if policy == "Orphan" and "orphan" not in finalizers:
            finalizers.append("orphan")
        if policy == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers.append("foregroundDeletion")
        if policy != "Orphan" and "orphan" in finalizers and options.propagation_policy:
            finalizers.remove("orphan")
        grace = self._grace_period(info, old, options)
        if meta.get("deletionTimestamp"):
            current = int(meta.get("deletionGracePeriodSeconds") or 0)
            if grace < current:
                meta["deletionGracePeriodSeconds"] = grace
                meta["deletionTimestamp"] = self.timestamp(grace)
            if not finalizers and grace == 0:
                return None
            if finalizers:
                meta["finalizers"] = finalizers
            return new
        if not finalizers and grace == 0:
            return None
        meta["finalizers"] = finalizers
        if not finalizers:
            meta.pop("finalizers")
        meta["deletionTimestamp"] = self.timestamp(grace)
        meta["deletionGracePeriodSeconds"] = grace
        meta["generation"] = int(meta.get("generation") or 1) + 1
        return new

    def remove_finalized_namespace(self, name: str) -> None:
        """Remove a terminating namespace whose contents are gone (namespace controller)."""
        info = by_kind("Namespace")
        for _ in range(MAX_RETRIES):
            old, cur_rev = self._read(info, "", name)
            meta = old.get("metadata") or {}
            if not meta.get("deletionTimestamp"):
                return
            spec_finalizers = [f for f in (old.get("spec") or {}).get("finalizers") or []
                               if f != "kubernetes"]  # fmt: skip
            try:
                if not spec_finalizers and not meta.get("finalizers"):
                    self.store.delete(object_key(info, "", name), cur_rev)
                    return
                new = jsoncodec.clone(old)
                new.setdefault("spec", {})["finalizers"] = spec_finalizers
                if new != old:
                    self.store.update(object_key(info, "", name), encode(new), cur_rev)
                return
            except RevisionMismatch:
                continue

    # -- scale ---------------------------------------------------------------------------

    def get_scale(
        self, kind: str, name: str, namespace: str | None = None, identity: Identity = SYSTEM
    ) -> Object:
        info = kind_info(kind)
        if not info.has_scale:
            raise NotFound(f"{info.resource} have no scale subresource")
        ns = self._namespace(info, namespace, None)
        self.authorizer.authorize(identity, "get_scale", info, ns, name)
        obj, rev = self._read(info, ns, name)
        return self._scale(info, obj, rev)

    def update_scale(
        self,
        kind: str,
        name: str,
        namespace: str | None,
        replicas: int,
        identity: Identity = SYSTEM,
    ) -> Object:
        info = kind_info(kind)
        if not info.has_scale:
            raise NotFound(f"{info.resource} have no scale subresource")
        if replicas < 0:
            raise Invalid(f'Scale "{name}" is invalid: spec.replicas: must be >= 0')
        ns = self._namespace(info, namespace, None)
        data, rev = self.patch(info.kind, name, {"spec": {"replicas": replicas}}, ns, "", identity)
        return self._scale(info, decode(data), rev)

    @staticmethod
    def _scale(info: KindInfo, obj: Object, rev: int) -> Object:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        return {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {
                "name": meta.get("name"),
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
                "resourceVersion": str(rev),
                "creationTimestamp": meta.get("creationTimestamp"),
            },
            "spec": {"replicas": int(spec.get("replicas", 0))},
            "status": {
                "replicas": int(status.get("replicas", 0)),
                "selector": selector_string(spec.get("selector")),
            },
        }
