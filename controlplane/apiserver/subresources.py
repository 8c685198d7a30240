"""The subresources beside an object's own verbs: pods/binding (many bindings
per call, sharing one durable commit) and scale."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from controlplane.api import limits, validation
from controlplane.api.checks import Errors
from controlplane.api.kinds import KindInfo, by_kind
from controlplane.api.merge_patch import merge_patch
from controlplane.api.selectors import selector_string
from controlplane.apiserver.auth import SYSTEM, Identity
from controlplane.apiserver.codec import Object, Stored, decode, encode, kind_info, object_key
from controlplane.apiserver.fieldmanager import FieldManager
from controlplane.apiserver.registry_base import MAX_RETRIES, RegistryBase, too_many_writers
from controlplane.client.errors import ApiError, Conflict, Invalid, NotFound, Unavailable
from controlplane.storage.interface import KeyNotFound, RevisionMismatch, StoreUnavailable


@dataclass(frozen=True)
class PodBinding:
    """One pods/binding request: put pod namespace/name on node (Kubernetes' Binding)."""

    namespace: str
    name: str
    node: str
    uid: str = ""
    annotations: dict[str, str] | None = None


def bind_many(
    base: RegistryBase,
    bindings: Sequence[PodBinding],
    identity: Identity = SYSTEM,
    dry_run: bool = False,
) -> list[Stored | ApiError]:
    """Bind each pod to its node, as Kubernetes' pods/binding subresource does.

    The result of a binding is exactly what a merge patch of spec.nodeName
    and the annotations would store, but a pod that is already assigned to
    a node (that one too: a binding is never repeated), is being deleted or
    still has scheduling gates is refused (409 Conflict on pods/binding) as
    Kubernetes' BindingREST refuses it. Bindings are independent: each gets
    its stored pod or its error, in order. Their writes go to the store
    together (`Store.update_many`), so they share one durable commit. dry_run:
    every check, each answered with the pod as it would be, nothing stored.
    """
    results: list[Stored | ApiError] = [Invalid("binding: not processed")] * len(bindings)
    pending: list[tuple[int, str, bytes, int]] = []
    for i, binding in enumerate(bindings):
        try:
            key, data, cur_rev = _prepare_binding(base, binding, identity)
        except ApiError as err:
            results[i] = err
            continue
        if dry_run:
            results[i] = (data, cur_rev)
        else:
            pending.append((i, key, data, cur_rev))
    if not pending:
        return results
    try:
        outcomes = base.store.update_many([(k, d, r) for _, k, d, r in pending])
    except StoreUnavailable as err:
        outcomes = [err] * len(pending)
    for (i, _key, data, _rev), outcome in zip(pending, outcomes, strict=True):
        if isinstance(outcome, int):
            results[i] = (data, outcome)
        elif isinstance(outcome, RevisionMismatch):
            results[i] = _bind_one(base, bindings[i], identity)  # raced: try again alone
        elif isinstance(outcome, KeyNotFound):
            results[i] = NotFound(f'pods "{bindings[i].name}" not found')
        else:
            results[i] = Unavailable(str(outcome))
    return results


def _bind_one(base: RegistryBase, binding: PodBinding, identity: Identity) -> Stored | ApiError:
    for _ in range(MAX_RETRIES):
        try:
            key, data, cur_rev = _prepare_binding(base, binding, identity)
            return data, base.store.update(key, data, cur_rev)
        except ApiError as err:
            return err
        except RevisionMismatch:
            continue
        except KeyNotFound:
            return NotFound(f'pods "{binding.name}" not found')
        except StoreUnavailable as err:
            return Unavailable(str(err))
    return too_many_writers(by_kind("Pod"), binding.name)


def _prepare_binding(
    base: RegistryBase, binding: PodBinding, identity: Identity
) -> tuple[str, bytes, int]:
    """(key, data, expected revision) to write."""
    info = by_kind("Pod")
    if not binding.node:
        raise Invalid("target.name: required")
    if not binding.name:
        raise Invalid("metadata.name: required")
    ns = base.namespace_of(info, binding.namespace or None, None)
    decided = base.authorize_request(identity, "bind", info, ns, binding.name)
    old, cur_rev = base.read(info, ns, binding.name)
    if not decided:
        base.authorizer.authorize(identity, "bind", info, ns, binding.name, old)
    meta = old.get("metadata") or {}
    if binding.uid and binding.uid != meta.get("uid"):
        raise Conflict(
            f"Precondition failed: UID in precondition: {binding.uid}, "
            f"UID in object meta: {meta.get('uid')}"
        )
    spec = old.get("spec") or {}
    if meta.get("deletionTimestamp"):
        raise _refused(binding.name, "is being deleted, cannot be assigned to a host")
    if spec.get("nodeName"):
        raise _refused(binding.name, f'is already assigned to node "{spec["nodeName"]}"')
    if spec.get("schedulingGates"):
        raise _refused(binding.name, "has non-empty .spec.schedulingGates")
    # What a merge patch of spec.nodeName and the annotations stores, without
    # the full update path: as in Kubernetes' binding storage, only the
    # fields it sets are checked (the rest was validated when written).
    # `old` is this call's own decoded copy: `new` shares its parts but for
    # the ones the binding changes (metadata, spec and the annotations).
    new_meta = dict(meta)
    new = {**old, "metadata": new_meta, "spec": {**(old.get("spec") or {})}}
    new["spec"]["nodeName"] = binding.node
    if binding.annotations:
        annotations = new_meta.get("annotations")
        new_meta["annotations"] = {
            **(annotations if isinstance(annotations, dict) else {}),
            **binding.annotations,
        }
        problems = Errors()
        validation.validate_metadata(problems, info, new)
        if problems:
            raise Invalid(f'Pod "{binding.name}" is invalid: ' + "; ".join(problems.items))
    new_meta["generation"] = int(new_meta.get("generation") or 1) + 1  # a spec change
    data = encode(new)
    limits.check_stored(len(data), info.resource, binding.name)
    return object_key(info, ns, binding.name), data, cur_rev


def _refused(pod: str, why: str) -> Conflict:
    """Kubernetes' refusal of a binding (BindingREST: NewConflict on pods/binding)."""
    return Conflict(
        f'Operation cannot be fulfilled on pods/binding "{pod}": pod {pod} {why}',
        details={"name": pod, "kind": "pods/binding"},
    )


def get_scale(
    base: RegistryBase,
    kind: str,
    name: str,
    namespace: str | None = None,
    identity: Identity = SYSTEM,
) -> Object:
    info = kind_info(kind)
    if not info.has_scale:
        raise NotFound(f"{info.resource} have no scale subresource")
    ns = base.namespace_of(info, namespace, None)
    base.authorizer.authorize(identity, "get_scale", info, ns, name)
    obj, rev = base.read(info, ns, name)
    return scale_of(info, obj, rev)


def scale_of(info: KindInfo, obj: Object, rev: int) -> Object:
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


def update_scale(
    registry: Any,  # the Registry (its write loop), a method of it
    kind: str,
    name: str,
    namespace: str | None,
    replicas: int,
    identity: Identity = SYSTEM,
    manager: FieldManager | None = None,
    dry_run: bool = False,
) -> Object:
    """spec.replicas written through the scale subresource (recorded so);
    dry_run: checked and answered, nothing stored."""
    info = kind_info(kind)
    if not info.has_scale:
        raise NotFound(f"{info.resource} have no scale subresource")
    if replicas < 0:
        raise Invalid(f'Scale "{name}" is invalid: spec.replicas: must be >= 0')
    ns = registry.namespace_of(info, namespace, None)
    patch = {"spec": {"replicas": replicas}}
    data, rev = registry._write_loop(
        info, ns, name, lambda old: merge_patch(old, patch), "", -1, identity, "patch",
        dry_run, manager, "scale",
    )  # fmt: skip
    return scale_of(info, decode(data), rev)
