"""What an update takes from the request and what it keeps of the stored
object, per subresource (Kubernetes' PrepareForUpdate of each registry
strategy): the main resource keeps the metadata a client may not change and
the status; status takes only the status; pods/ephemeralcontainers and
pods/resize take only their part of the spec. Pure functions on decoded
objects: the registry decodes, validates, admits and records around them
(registry.Registry._prepare_update)."""

from __future__ import annotations

from controlplane.api import ephemeral, resize
from controlplane.api.kinds import KindInfo
from controlplane.apiserver.codec import Object, meta_of, spec_part
from controlplane.client.errors import Conflict, Forbidden, Invalid

EPHEMERAL = "ephemeralcontainers"  # the pods/ephemeralcontainers subresource
RESIZE = "resize"  # pods/resize: in-place resize of the containers' resources
POD_SPEC_SUBRESOURCES = (EPHEMERAL, RESIZE)

# What the stored object keeps whatever the request says.
_KEPT_META = ("name", "namespace", "uid", "creationTimestamp", "generateName",
              "deletionTimestamp", "deletionGracePeriodSeconds")  # fmt: skip


def check_request(info: KindInfo, old: Object, requested: Object) -> None:
    """The request's kind and uid must be the stored object's."""
    if requested.get("kind") not in (None, "", info.kind):
        raise Invalid(f"kind: {requested.get('kind')!r} does not match {info.kind}")
    old_uid = (old.get("metadata") or {}).get("uid")
    uid = meta_of(requested).get("uid")
    if uid and uid != old_uid:
        raise Conflict(
            f"Precondition failed: UID in object meta: {uid}, UID of the stored object: {old_uid}"
        )


def pod_spec_update(subresource: str, old: Object, requested: Object) -> Object:
    """pods/ephemeralcontainers (kubectl debug): only spec.ephemeralContainers
    is taken from the request; pods/resize only the containers' resources and
    resizePolicy. The metadata stays the stored object's."""
    if subresource == EPHEMERAL:
        new = ephemeral.ephemeral_update(old, requested)
    else:
        new = resize.resize_update(old, requested)
    new["metadata"] = dict(old.get("metadata") or {})
    return new


def check_resize(old: Object, new: Object) -> None:
    """Invalid (with its causes, as validation gives them) for a resize the
    pod may not make."""
    bad = [f"{path}: {problem}" for path, problem in resize.resize_problems(old, new)]
    if bad:
        name = (old.get("metadata") or {}).get("name")
        err = Invalid(f'Pod "{name}" is invalid: ' + "; ".join(bad))
        err.causes = bad  # type: ignore[attr-defined]  # as validate() gives them
        raise err


def status_update(old: Object, requested: Object) -> Object:
    """The stored object with the request's status.

    `old` is the write attempt's own decoded copy, never changed: the result
    shares its parts but for the metadata (managedFields are written in) and
    the status, taken from the request, which may share parts with `old` too
    (Registry.patch): nothing changes either. Not pruned: every schema
    declares status free-form, and the rest is the stored object."""
    new = {**old, "metadata": dict(old.get("metadata") or {})}
    _status_of(new, requested)
    return new


def main_update(info: KindInfo, old: Object, requested: Object) -> Object:
    """The request (used and changed) with what it may not change taken from
    the stored object: identity, timestamps, deletion and the status."""
    new = requested
    new["kind"] = info.kind
    new.setdefault("apiVersion", old.get("apiVersion", info.api_version))
    old_meta = old.get("metadata") or {}
    meta = meta_of(new)
    meta.pop("resourceVersion", None)
    for field in _KEPT_META:
        if field in old_meta:
            meta[field] = old_meta[field]
        else:
            meta.pop(field, None)
    if info.has_status:
        _status_of(new, old)
    return new


def _status_of(new: Object, source: Object) -> None:
    """`new` gets `source`'s status, or none when it has none."""
    if "status" in source:
        new["status"] = source["status"]
    else:
        new.pop("status", None)


def after_decoding(info: KindInfo, old: Object, new: Object) -> None:
    """On the decoded update: metadata.generation bumped on a spec change
    only; no new finalizer on an object being deleted (Forbidden)."""
    old_meta = old.get("metadata") or {}
    meta = new["metadata"]
    old_generation = int(old_meta.get("generation") or 1)
    meta["generation"] = old_generation + 1 if spec_part(new) != spec_part(old) else old_generation
    if old_meta.get("deletionTimestamp"):
        added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
        if added:
            raise Forbidden(
                f"metadata.finalizers: no new finalizers can be added while "
                f"{info.kind} is being deleted: {sorted(added)}"
            )
