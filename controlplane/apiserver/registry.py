"""The generic object registry: Kubernetes API semantics over a Store.

Create (generateName, uid, timestamps, defaults, validation, namespace must
exist and not be terminating), Get, List, Update with optimistic concurrency,
the status subresource (generation bumps only on spec changes), merge Patch,
Delete, binding and scale. `Registry` is the one class the API server uses;
its parts live beside it:

- codec.py: the stored form (JSON without resourceVersion) and the keys;
- registry_base.py: what every verb shares (namespace rules, reads,
  validation, timestamps, the read cache);
- listing.py: selectors, pages and continue tokens;
- deletion.py: grace periods, preconditions and finalizers;
- subresources.py: pods/binding and scale;
- update_rules.py: what an update takes from the request, per subresource.

Kind-specific admission (pod priority, service IPs, job selectors) is in
`admission.py`. Errors are the client-facing ones (controlplane.client.errors);
this module never touches gRPC.
"""

from __future__ import annotations

import builtins
import datetime
import functools
import secrets
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from controlplane.api import defaults, jsoncodec, kinds, limits, pruning, server_side_apply
from controlplane.api.kinds import KindInfo, by_kind
from controlplane.api.merge_patch import merge_patch, merge_patch_shared
from controlplane.apiserver import admission_chain, deletion, listing, subresources, update_rules
from controlplane.apiserver.admission_context import CREATE, UPDATE, Attributes
from controlplane.apiserver.auth import SYSTEM, Identity
from controlplane.apiserver.authz import Authorizer
from controlplane.apiserver.codec import (
    Object,
    Stored,
    decode,
    encode,
    kind_info,
    kind_prefix,
    meta_of,
    new_uid,
    object_key,
    parse_rv,
)
from controlplane.apiserver.fieldmanager import FieldManager, default
from controlplane.apiserver.registry_base import (
    MAX_RETRIES,
    RegistryBase,
    conflict,
    too_many_writers,
)
from controlplane.apiserver.update_rules import POD_SPEC_SUBRESOURCES, RESIZE
from controlplane.client.errors import AlreadyExists, ApiError, Invalid, NotFound, Unavailable
from controlplane.storage.interface import (
    KeyExists,
    KeyNotFound,
    RevisionMismatch,
    StorageError,
    Store,
    StoreUnavailable,
)

_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class _NewObject(NamedTuple):
    """A create checked and filled in, waiting for its write."""

    info: KindInfo
    ns: str
    name: str
    obj: Object
    generate: bool


# Admission hook: (registry, info, obj, old) -> None, may mutate obj, raises API errors.
Admit = Callable[["Registry", KindInfo, Object, Object | None], None]
# Admission of every kind after the kind's own (LimitRanger, RuntimeClass,
# ResourceQuota): (registry, info, obj, old, dry_run); a dry run changes nothing.
Plugin = Callable[["Registry", KindInfo, Object, Object | None, bool], None]
# Validating admission (PodSecurity): sees the final object, never changes it.
Validate = Callable[[Attributes], None]


class Registry(RegistryBase):
    """See the module docstring."""

    def __init__(
        self,
        store: Store,
        now: Callable[[], datetime.datetime] | None = None,
        admission: dict[str, Admit] | None = None,
        authorizer: Authorizer | None = None,
        service_cidr: str = "10.43.0.0/16",
    ) -> None:
        super().__init__(store, now, authorizer)
        self.service_cidr = service_cidr  # what Service admission allocates cluster IPs from
        # Create-only kinds (reviews): kind -> fills in the answer, never stored.
        self.reviews: dict[str, Callable[[Object, Identity], Object]] = {}
        self.admission: dict[str, Admit] = dict(admission or {})
        self.plugins: builtins.list[Plugin] = []
        # Run after every kind's admission, on every create and update.
        self.validating: builtins.list[Validate] = []
        # Kinds that record who created them (a CSR's spec.username, groups,
        # uid, extra), as their strategy's PrepareForCreate: kind -> fills obj.
        self.requesters: dict[str, Callable[[Object, Identity], None]] = {}

    def cached_objects(self, kind: str) -> builtins.list[Object]:
        """Every object of a cluster-scoped kind, decoded (PriorityClasses for pod
        admission); shared, read only."""
        info = kind_info(kind)
        return self.cached(  # type: ignore[no-any-return]
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
        manager: FieldManager | None = None,
        typed: bool = False,
    ) -> Stored:
        """copy_input=False lets the registry use (and change) obj, e.g. a freshly decoded one.
        dry_run: every check and default, nothing stored (revision 0).
        manager: who managedFields record the write for (default: from `identity`).
        typed: obj was decoded from protobuf, so it holds no unknown field to seek."""
        info = kind_info(kind)
        if info.create_only:
            return self._review(info, obj, namespace, identity)
        new = self._prepare_create(
            kind, obj, namespace, identity, copy_input, manager, dry_run, not dry_run, typed
        )
        if dry_run:
            return encode(new.obj), 0
        return self._store_new(new, charge=True)  # quota charged as it is stored

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
        ns = self.namespace_of(info, namespace, obj)
        meta = meta_of(obj)
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

    def create_many(
        self,
        items: Sequence[tuple[str, Object, str | None]],
        identity: Identity = SYSTEM,
        manager: FieldManager | None = None,
    ) -> builtins.list[Stored | ApiError]:
        """Independent creates of (kind, object, namespace), as many create()s would
        do them (the objects are used and changed), but written together so they
        share group commits. Each has its own outcome, in order."""
        outcomes: builtins.list[Stored | ApiError | None] = [None] * len(items)
        ready: builtins.list[tuple[int, _NewObject]] = []
        for i, (kind, obj, namespace) in enumerate(items):
            try:
                ready.append(
                    (i, self._prepare_create(kind, obj, namespace, identity, False, manager))
                )
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
                outcomes[i] = AlreadyExists(
                    f'{new.info.resource} "{new.name}" already exists', details={"name": new.name}
                )
            elif isinstance(result, StorageError):
                outcomes[i] = Unavailable(str(result))
            else:
                outcomes[i] = (data, result)
        return [o for o in outcomes if o is not None]

    def _prepare_create(
        self,
        kind: str,
        obj: Object,
        namespace: str | None,
        identity: Identity,
        copy_input: bool,
        manager: FieldManager | None,
        dry_run: bool = False,
        defer: bool = False,
        typed: bool = False,
    ) -> _NewObject:
        """Everything a create checks and fills in, up to the write (with `defer`
        the quota's charge is left to it: admission_chain.store_create)."""
        info = kind_info(kind)
        self.check_stored(info)
        if not isinstance(obj, dict):
            raise Invalid("object: must be a JSON object")
        if copy_input:
            obj = jsoncodec.clone(obj)
        if obj.get("kind") not in (None, "", info.kind):
            raise Invalid(f"kind: {obj.get('kind')!r} does not match the request ({info.kind})")
        obj["kind"] = info.kind
        obj.setdefault("apiVersion", info.api_version)
        ns = self.namespace_of(info, namespace, obj)
        meta = meta_of(obj)
        if ns:
            meta["namespace"] = ns
        for field in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds",
                      "selfLink"):  # fmt: skip
            meta.pop(field, None)
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = self.timestamp()
        meta["generation"] = 1
        generate = bool(not meta.get("name") and meta.get("generateName"))
        if generate:
            meta["name"] = self._generated_name(str(meta["generateName"]))
        if info.has_status and not kinds.definition(info.key).keeps_status_on_create:
            obj.pop("status", None)
        name = str(meta.get("name") or "")  # validation refuses a missing one
        self.authorizer.authorize(identity, "create", info, ns, name, None, obj)
        requester = self.requesters.get(info.key)
        if requester is not None:
            requester(obj, identity)
        self._decoded(info, obj, None, typed)
        # The creator owns what it sent and the defaults, not what the server
        # adds next (a Job's selector, admission's and webhooks' changes):
        # kube-apiserver records managedFields before admission and PrepareForCreate.
        self._record(info, None, obj, manager or default(identity), "")
        self.validate(info, obj, None)
        self.check_namespace_open(info, ns)
        admit = self.admission.get(info.key)
        if admit is not None:
            admit(self, info, obj, None)  # server-made changes: not validated again
        mutating, last = admission_chain.split(self.plugins)
        for plugin in mutating:  # LimitRanger, RuntimeClass
            plugin(self, info, obj, None, dry_run)
        obj = admission_chain.after_mutating(
            Attributes(CREATE, info.key, ns, name, "", identity, obj, None, dry_run),
            self.webhooks, self.validating, lambda o: self._again(info, o, None, ""),
        )  # fmt: skip
        for plugin in last:  # ResourceQuota
            if not admission_chain.deferred(plugin, defer):
                plugin(self, info, obj, None, dry_run)
        definition = kinds.definition(info.key)
        if info.has_status and not definition.keeps_status_on_create and "status" not in obj:
            # Kubernetes' zero status, as it serializes: never a managed field.
            obj["status"] = jsoncodec.clone(dict(definition.initial_status))
        return _NewObject(info, ns, name, obj, generate)

    @staticmethod
    def _decoded(info: KindInfo, obj: Object, old: Object | None, typed: bool = False) -> None:
        """What Kubernetes' decoding does to a written object, in place: fields
        the kind's schema does not know dropped (the parts unchanged from
        `old`, the stored object, hold none; a `typed` object, none at all),
        defaults filled in."""
        if not typed:
            pruning.prune(obj, old)
        defaults.apply_defaults(info.key, obj)

    def _again(self, info: KindInfo, obj: Object, old: Object | None, subresource: str) -> Object:
        """A mutating webhook's object decoded and validated (a status write
        keeps only its status, as the status strategy does)."""
        if subresource == "status" and old is not None:
            obj = update_rules.status_update(old, obj)
        elif not subresource:
            self._decoded(info, obj, old)
        self.validate(info, obj, old)
        return obj

    def _record(
        self, info: KindInfo, old: Object | None, new: Object, manager: FieldManager,
        subresource: str,
    ) -> None:  # fmt: skip
        """metadata.managedFields of `new` with this write recorded for its
        manager (an apply recorded its own)."""
        if manager.applied:
            return
        entries = server_side_apply.updated_entries(
            old, new, manager.name, kind=info.key, subresource=subresource, now=self.timestamp()
        )
        meta = new["metadata"]
        if entries:
            meta["managedFields"] = entries
        else:
            meta.pop("managedFields", None)

    def _store_new(self, new: _NewObject, charge: bool = False) -> Stored:
        for attempt in range(8):
            data = encode(new.obj)
            limits.check_stored(len(data), new.info.resource, new.name)
            try:
                rev = admission_chain.store_create(
                    self.plugins if charge else (), self, new.info, new.obj,
                    object_key(new.info, new.ns, new.name), data, self.store.create,
                )  # fmt: skip
                return data, rev
            except KeyExists as err:
                if not new.generate or attempt == 7:
                    raise AlreadyExists(
                        f'{new.info.resource} "{new.name}" already exists',
                        details={"name": new.name},
                    ) from err
                new = new._replace(name=self._rename(new))
            except StoreUnavailable as err:
                raise Unavailable(str(err)) from err
        raise AssertionError("unreachable")

    def _rename(self, new: _NewObject) -> str:
        meta = meta_of(new.obj)
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
        self.check_stored(info)
        ns = self.namespace_of(info, namespace, None)
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

    # Lists, delete, binding and scale live in their own modules; these are
    # methods of Registry all the same (their first parameter is the registry).
    list = listing.list_objects
    list_pages = listing.list_pages
    delete = deletion.delete
    remove_finalized_namespace = deletion.remove_finalized_namespace
    bind_many = subresources.bind_many
    get_scale = subresources.get_scale
    update_scale = subresources.update_scale

    # -- update / status / patch ------------------------------------------------------

    def update(
        self,
        kind: str,
        obj: Object,
        subresource: str = "",
        identity: Identity = SYSTEM,
        copy_input: bool = True,
        dry_run: bool = False,
        manager: FieldManager | None = None,
    ) -> Stored:
        """copy_input=False lets the registry use (and change) obj, e.g. a freshly decoded one.
        manager: who managedFields record the write for (default: from `identity`)."""
        info = kind_info(kind)
        if not isinstance(obj, dict):
            raise Invalid("object: must be a JSON object")
        meta = meta_of(obj)
        name = str(meta.get("name") or "")
        if not name:
            raise Invalid("metadata.name: required")
        ns = self.namespace_of(info, None, obj)
        client_rv = parse_rv(meta["resourceVersion"]) if meta.get("resourceVersion") else 0
        return self._write_loop(
            info, ns, name, lambda _old: jsoncodec.clone(obj) if copy_input else obj,
            subresource, client_rv, identity, "update", dry_run, manager,
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
        manager: FieldManager | None = None,
    ) -> Stored:
        """A JSON merge patch (RFC 7386)."""
        if not isinstance(patch, dict):
            raise Invalid("patch: a JSON merge patch must be a JSON object")
        # A status write takes only the result's status (and its preconditions)
        # and changes none of it: the result may share with `old` what the
        # patch leaves alone, instead of a copy of the whole object.
        merge = merge_patch_shared if subresource == "status" else merge_patch

        def build(old: Object) -> Object:
            merged: Object = merge(old, patch)
            return merged

        return self.patch_with(
            kind, name, build, namespace, subresource, identity, dry_run, manager
        )

    def patch_with(
        self,
        kind: str,
        name: str,
        build: Callable[[Object], Object],
        namespace: str | None = None,
        subresource: str = "",
        identity: Identity = SYSTEM,
        dry_run: bool = False,
        manager: FieldManager | None = None,
    ) -> Stored:
        """Any patch, given as `build(old) -> new` (which must not change `old`).

        It runs inside the write loop, on the stored object as read at each
        attempt, so every patch type gets the same validation, admission,
        authorization and conflict handling. A resourceVersion the patch
        result carries (in metadata) is a precondition, as in Kubernetes.
        """
        info = kind_info(kind)
        ns = self.namespace_of(info, namespace, None)
        return self._write_loop(
            info, ns, name, build, subresource, -1, identity, "patch", dry_run, manager
        )

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
        manager: FieldManager | None = None,
        recorded_as: str | None = None,
    ) -> Stored:
        """client_rv: the resourceVersion the write must find (0: any); -1: the
        one the built object names, if any (patches). recorded_as: the
        subresource managedFields name, when not the one written (scale)."""
        self.check_stored(info)
        own = kinds.definition(info.key).status_subresources  # a CSR's approval
        if subresource not in ("", "status", *POD_SPEC_SUBRESOURCES) and subresource not in own:
            raise Invalid(f"subresource: {subresource!r} is not supported (use '' or 'status')")
        if subresource == "status" and not info.has_status:
            raise NotFound(f"{info.resource} have no status subresource")
        if subresource in POD_SPEC_SUBRESOURCES and info.key != "Pod":
            raise NotFound(f"{info.resource} have no {subresource} subresource")
        key = object_key(info, ns, name)
        full_verb = f"{verb}_{subresource}" if subresource else verb
        decided = self.authorize_request(identity, full_verb, info, ns, name)
        for _ in range(MAX_RETRIES):
            old, cur_rev = self.read(info, ns, name)
            if not decided:
                self.authorizer.authorize(identity, full_verb, info, ns, name, old)
            if client_rv > 0 and client_rv != cur_rev:
                raise conflict(info, name, cur_rev)
            seen = old
            if client_rv < 0:  # a patch sees the object as a client reads it: its
                # resourceVersion in (a JSON patch may `test` it, kopf does)
                seen = {**old, "metadata": {**(old.get("metadata") or {}),
                                            "resourceVersion": str(cur_rev)}}  # fmt: skip
            requested = build(seen)  # builders never change `old` (merge_patch copies)
            if not isinstance(requested, dict):
                raise Invalid("object: must be a JSON object")
            precondition = client_rv
            pinned = False  # whether the patch itself names another resourceVersion
            if client_rv < 0:
                wanted = meta_of(requested).get("resourceVersion")
                precondition = parse_rv(wanted) if wanted else 0
                if precondition and precondition != cur_rev:
                    raise conflict(info, name, cur_rev)
                pinned = False if precondition == cur_rev else bool(precondition)
            new = self._prepare_update(
                info, old, requested, subresource, manager or default(identity),
                subresource if recorded_as is None else recorded_as, dry_run,
            )  # fmt: skip
            if not identity.admin:  # may it make this change (NodeRestriction)?
                self.authorizer.authorize(identity, full_verb, info, ns, name, old, new)
            again = functools.partial(self._again, info, old=old, subresource=subresource)
            new = admission_chain.after_mutating(
                Attributes(UPDATE, info.key, ns, name, subresource, identity, new, old, dry_run),
                self.webhooks, self.validating, again,
            )  # fmt: skip
            if not subresource:
                for plugin in admission_chain.split(self.plugins)[1]:  # ResourceQuota
                    plugin(self, info, new, old, dry_run)
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
                # A patch that left the resourceVersion as it read it is tried
                # again on the new object (one that pinned it then conflicts).
                if precondition > 0 and (client_rv >= 0 or pinned):
                    raise conflict(info, name, err.current) from err
            except KeyNotFound as err:
                raise NotFound(f'{info.resource} "{name}" not found') from err
            except StoreUnavailable as err:
                raise Unavailable(str(err)) from err
        raise too_many_writers(info, name)

    def _prepare_update(
        self,
        info: KindInfo,
        old: Object,
        requested: Object,
        subresource: str,
        manager: FieldManager,
        recorded_as: str,
        dry_run: bool = False,
    ) -> Object:
        """The object an update stores (update_rules says what it takes from
        the request), decoded, validated and admitted, the write recorded."""
        update_rules.check_request(info, old, requested)
        if subresource in POD_SPEC_SUBRESOURCES:
            new = update_rules.pod_spec_update(subresource, old, requested)
            self._decoded(info, new, old)
            self.validate(info, new, old)
            if subresource == RESIZE:
                update_rules.check_resize(old, new)
            self._record(info, old, new, manager, recorded_as)
            return new
        prepare = kinds.definition(info.key).prepare_update
        if subresource:  # status, or a kind's own status subresource (a CSR's
            # approval): what each may change is the kind's prepare_update.
            new = update_rules.status_update(old, requested)
            found = prepare(subresource, new, old) if prepare is not None else []
            self.validate(info, new, old, found)
        else:
            new = update_rules.main_update(info, old, requested)
            self._decoded(info, new, old)
            update_rules.after_decoding(info, old, new)
            found = prepare("", new, old) if prepare is not None else []
            self.validate(info, new, old, found)
            admit = self.admission.get(info.key)
            if admit is not None:
                admit(self, info, new, old)
            for plugin in admission_chain.split(self.plugins)[0]:  # LimitRanger, RuntimeClass
                plugin(self, info, new, old, dry_run)
        self._record(info, old, new, manager, recorded_as)
        return new
