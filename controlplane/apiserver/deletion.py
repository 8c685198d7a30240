"""Delete: options and preconditions, grace periods, the finalizers of the
propagation policies, and the removal of a finalized namespace."""

from __future__ import annotations

from typing import cast

from controlplane.api import jsoncodec
from controlplane.api.kinds import KindInfo, by_kind, find
from controlplane.api.kinds.definition import AdmissionApi
from controlplane.apiserver.admission_context import DELETE, Attributes
from controlplane.apiserver.auth import SYSTEM, Identity
from controlplane.apiserver.codec import (
    Object,
    Stored,
    encode,
    kind_info,
    meta_of,
    object_key,
    parse_rv,
)
from controlplane.apiserver.registry_base import MAX_RETRIES, RegistryBase, too_many_writers
from controlplane.client.errors import Conflict, Forbidden, Invalid, NotFound, Unavailable
from controlplane.client.interface import DeleteOptions
from controlplane.storage.interface import KeyNotFound, RevisionMismatch, StoreUnavailable

PROTECTED_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})


def delete(
    base: RegistryBase,
    kind: str,
    name: str,
    namespace: str | None = None,
    options: DeleteOptions | None = None,
    identity: Identity = SYSTEM,
    dry_run: bool = False,
    return_deleted: bool = False,
) -> Stored | None:
    """The object as it stays (being deleted), or None when it is gone
    (`return_deleted`: as it was, for the kinds whose DELETE answers the
    object either way, as Kubernetes' ReturnDeletedObject stores do)."""
    info = kind_info(kind)
    base.check_stored(info)
    options = options or DeleteOptions()
    ns = base.namespace_of(info, namespace, None)
    decided = base.authorize_request(identity, "delete", info, ns, name)
    policy = options.propagation_policy or "Background"
    if policy not in ("Background", "Foreground", "Orphan"):
        raise Invalid(
            f"propagationPolicy: unsupported value {policy!r}: "
            "supported values: Background, Foreground, Orphan"
        )
    if options.grace_period_seconds is not None and options.grace_period_seconds < 0:
        raise Invalid("gracePeriodSeconds: must be >= 0")
    key = object_key(info, ns, name)
    for _ in range(MAX_RETRIES):
        old, cur_rev = base.read(info, ns, name)
        if not decided:
            base.authorizer.authorize(identity, "delete", info, ns, name, old, None)
        if info.kind == "Namespace" and name in PROTECTED_NAMESPACES:
            raise Forbidden(f'namespaces "{name}" is forbidden: this namespace may not be deleted')
        kdef = find(info.key)  # None: a custom kind whose CRD just went
        refuse = kdef.admit_delete if kdef is not None else None
        if refuse is not None:
            refuse(cast("AdmissionApi", base), info, old)  # the Registry is the AdmissionApi
        if base.webhooks is not None:  # a DELETE's webhooks see the stored object as oldObject
            a = Attributes(DELETE, info.key, ns, name, "", identity, old, old, dry_run,
                           _options(options, policy))  # fmt: skip
            base.webhooks.mutate(a)
            base.webhooks.validate(a)
        meta = old.get("metadata") or {}
        if options.precondition_uid and options.precondition_uid != meta.get("uid"):
            raise Conflict(
                f"Precondition failed: UID in precondition: {options.precondition_uid}, "
                f"UID in object meta: {meta.get('uid')}"
            )
        if (
            options.precondition_resource_version
            and parse_rv(options.precondition_resource_version, "preconditions.resourceVersion")
            != cur_rev
        ):
            raise Conflict(
                f"Precondition failed: ResourceVersion in precondition: "
                f"{options.precondition_resource_version}, ResourceVersion in object meta: "
                f"{cur_rev}"
            )
        new = _deletion_state(base, info, old, options, policy)
        gone: Stored | None = (encode(old), cur_rev) if return_deleted else None
        if dry_run:
            return gone if new is None else (encode(new), cur_rev)
        try:
            if new is None:
                base.store.delete(key, cur_rev)
                return gone
            if new == old:
                return encode(old), cur_rev
            data = encode(new)
            return data, base.store.update(key, data, cur_rev)
        except RevisionMismatch:
            continue
        except KeyNotFound as err:
            raise NotFound(f'{info.resource} "{name}" not found') from err
        except StoreUnavailable as err:
            raise Unavailable(str(err)) from err
    raise too_many_writers(info, name)


def _options(options: DeleteOptions, policy: str) -> dict[str, object]:
    """DeleteOptions as a webhook's AdmissionReview shows them."""
    shown: dict[str, object] = {"propagationPolicy": policy}
    if options.grace_period_seconds is not None:
        shown["gracePeriodSeconds"] = options.grace_period_seconds
    pre = {"uid": options.precondition_uid,
           "resourceVersion": options.precondition_resource_version}  # fmt: skip
    if any(pre.values()):
        shown["preconditions"] = {k: v for k, v in pre.items() if v}
    return shown


def _grace_period(info: KindInfo, obj: Object, options: DeleteOptions) -> int:
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
    base: RegistryBase, info: KindInfo, old: Object, options: DeleteOptions, policy: str
) -> Object | None:
    """The object as it must be stored after this delete, or None to remove it now.

    Only metadata (and a namespace's status) change: the rest is shared
    with `old`, never deep-copied, so an object too deeply nested to copy
    (stored before the depth limit) can still be deleted."""
    new = dict(old)
    meta = new["metadata"] = dict(meta_of(old))
    if info.kind == "Namespace":
        new["status"] = dict(old.get("status") or {})
    finalizers: list[str] = list(meta.get("finalizers") or [])
    if info.kind == "Namespace":
        if not meta.get("deletionTimestamp"):
            meta["deletionTimestamp"] = base.timestamp()
            meta["deletionGracePeriodSeconds"] = 0
            new.setdefault("status", {})["phase"] = "Terminating"
        return new
    if policy == "Orphan" and "orphan" not in finalizers:
        finalizers.append("orphan")
    if policy == "Foreground" and "foregroundDeletion" not in finalizers:
        finalizers.append("foregroundDeletion")
    if policy != "Orphan" and "orphan" in finalizers and options.propagation_policy:
        finalizers.remove("orphan")
    grace = _grace_period(info, old, options)
    if meta.get("deletionTimestamp"):
        current = int(meta.get("deletionGracePeriodSeconds") or 0)
        if grace < current:
            meta["deletionGracePeriodSeconds"] = grace
            meta["deletionTimestamp"] = base.timestamp(grace)
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
    meta["deletionTimestamp"] = base.timestamp(grace)
    meta["deletionGracePeriodSeconds"] = grace
    meta["generation"] = int(meta.get("generation") or 1) + 1
    return new


def remove_finalized_namespace(base: RegistryBase, name: str) -> None:
    """Remove a terminating namespace whose contents are gone (namespace controller)."""
    info = by_kind("Namespace")
    for _ in range(MAX_RETRIES):
        old, cur_rev = base.read(info, "", name)
        meta = old.get("metadata") or {}
        if not meta.get("deletionTimestamp"):
            return
        spec_finalizers = [f for f in (old.get("spec") or {}).get("finalizers") or []
                           if f != "kubernetes"]  # fmt: skip
        try:
            if not spec_finalizers and not meta.get("finalizers"):
                base.store.delete(object_key(info, "", name), cur_rev)
                return
            new = jsoncodec.clone(old)
            new.setdefault("spec", {})["finalizers"] = spec_finalizers
            if new != old:
                base.store.update(object_key(info, "", name), encode(new), cur_rev)
            return
        except RevisionMismatch:
            continue
