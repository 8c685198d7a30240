"""A StatefulSet's claims from its volumeClaimTemplates (pure).

Ordinal N of set S gets, per template T, the claim `T-S-N` with the
template's spec and labels plus the set's selector labels, and its pod gets
a `persistentVolumeClaim` volume named T for it (replacing a template volume
of that name). persistentVolumeClaimRetentionPolicy: whenDeleted Delete
gives each claim an ownerReference to the set (the garbage collector
removes it with the set); whenScaled Delete condemns the claims of ordinals
at or above the replicas once their pods are gone. Retain, the default,
keeps every claim.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from controlplane.api import volumes as v
from controlplane.controllers import podutil

Object = dict[str, Any]


def _policy(sts: Mapping[str, Any], field: str) -> str:
    policy = podutil.spec(sts).get("persistentVolumeClaimRetentionPolicy") or {}
    return str(policy.get(field) or "Retain")


def templates(sts: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [
        t
        for t in podutil.spec(sts).get("volumeClaimTemplates") or []
        if isinstance(t, Mapping) and (t.get("metadata") or {}).get("name")
    ]


def claims_for(sts: Mapping[str, Any], ordinal: int) -> list[Object]:
    """The claims ordinal `ordinal` needs."""
    set_name = podutil.name_of(sts)
    selector = (podutil.spec(sts).get("selector") or {}).get("matchLabels") or {}
    out = []
    for t in templates(sts):
        tmeta = t.get("metadata") or {}
        meta: Object = {
            "name": v.template_claim_name(str(tmeta["name"]), set_name, ordinal),
            "namespace": podutil.namespace_of(sts),
            "labels": {**(tmeta.get("labels") or {}), **selector},
        }
        if tmeta.get("annotations"):
            meta["annotations"] = dict(tmeta["annotations"])
        if _policy(sts, "whenDeleted") == "Delete":
            meta["ownerReferences"] = [podutil.owner_ref(sts, controller=False)]
        out.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": meta,
                "spec": copy.deepcopy(dict(t.get("spec") or {})),
            }
        )
    return out


def add_claim_volumes(pod: Object, sts: Mapping[str, Any], ordinal: int) -> None:
    """Give `pod` a volume per template naming the ordinal's claim."""
    set_name = podutil.name_of(sts)
    spec = pod.setdefault("spec", {})
    vols = [x for x in spec.get("volumes") or [] if isinstance(x, dict)]
    for t in templates(sts):
        name = str((t.get("metadata") or {})["name"])
        vols = [x for x in vols if x.get("name") != name]
        vols.append(
            {
                "name": name,
                "persistentVolumeClaim": {
                    "claimName": v.template_claim_name(name, set_name, ordinal)
                },
            }
        )
    if vols:
        spec["volumes"] = vols


def ordinal_of_claim(sts: Mapping[str, Any], claim_name: str) -> int | None:
    """The ordinal whose claim from one of the set's templates `claim_name` is, or None."""
    set_name = podutil.name_of(sts)
    for t in templates(sts):
        prefix = f"{(t.get('metadata') or {})['name']}-{set_name}-"
        rest = claim_name[len(prefix) :]
        if claim_name.startswith(prefix) and rest.isdigit():
            return int(rest)
    return None


def condemned_claims(
    sts: Mapping[str, Any],
    claims: Iterable[Mapping[str, Any]],
    pods: Mapping[int, Any],
    replicas: int,
) -> list[Mapping[str, Any]]:
    """whenScaled Delete: claims of ordinals >= replicas whose pod no longer exists."""
    if _policy(sts, "whenScaled") != "Delete":
        return []
    out = []
    for claim in claims:
        if podutil.is_deleting(claim):
            continue
        ordinal = ordinal_of_claim(sts, podutil.name_of(claim))
        if ordinal is not None and ordinal >= replicas and ordinal not in pods:
            out.append(claim)
    return out
