"""Discovery documents: /version, /api, /api/v1, /apis, /apis/<g>[/<v>].

Computed from the kinds registry at every request, so kinds added at run
time appear at once: each kind's names, scope, categories and subresources
are its definition's (controlplane/api/kinds/). Verbs, short names, the
namespaced flag and categories are what `kubectl api-resources` and
clients' RESTMappers read.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from controlplane.api import crd, crd_versions, kinds
from controlplane.api.kinds import KindInfo
from controlplane.apiserver.rest import reviews
from controlplane.apiserver.rest.paths import every_kind, kinds_at, served_versions

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def core_versions() -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
    }


def _groups() -> dict[str, list[str]]:
    """group -> its versions, preferred first. The groups of
    CustomResourceDefinitions in Kubernetes' version priority (v2 before v1
    before v1beta1), as kube-apiserver's CRD discovery: the preferred
    version is the highest served one, whichever stores the objects."""
    groups: dict[str, list[str]] = {}
    custom: set[str] = set()
    for info in every_kind():
        for group_version in served_versions(info):
            group, _, ver = group_version.rpartition("/")
            if group:
                versions = groups.setdefault(group, [])
                if ver not in versions:
                    versions.append(ver)
                if crd.is_custom(info.key):
                    custom.add(group)
    for group in custom:
        groups[group] = crd_versions.sorted_versions(groups[group])
    return groups


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def group_list() -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(g, vs) for g, vs in sorted(_groups().items())],
    }


def group(name: str) -> dict[str, Any] | None:
    versions = _groups().get(name)
    if versions is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def storage_version_hash(api_version: str, kind: str) -> str:
    """Kubernetes' storageversionhash: base64 of the first 8 bytes of the
    SHA-256 of `group/version/kind` of the version objects are stored at
    (the core group is "", so `/v1/Pod`). Clients (the storage version
    migrator, kubectl's discovery cache) compare it to notice a change."""
    group, _, version = api_version.rpartition("/")
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def _resource(info: KindInfo) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": info.plural,
        "singularName": info.singular,
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": ["create"] if info.create_only else ["get", "list"] if info.read_only else VERBS,
    }
    if not info.create_only and not info.read_only:  # stored: the version's hash
        entry["storageVersionHash"] = storage_version_hash(info.api_version, info.kind)
    if info.short_names:
        entry["shortNames"] = list(info.short_names)
    if info.categories:
        entry["categories"] = list(dict.fromkeys(info.categories))
    return entry


def _subresource(
    info: KindInfo, sub: str, verbs: list[str], group: str = "", ver: str = "", kind: str = ""
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": f"{info.plural}/{sub}",
        "singularName": "",
        "namespaced": info.namespaced,
        "kind": kind or info.kind,
        "verbs": verbs,
    }
    if group or ver:
        entry["group"], entry["version"] = group, ver
    return entry


def resource_list(group_version: str) -> dict[str, Any] | None:
    served = kinds_at(group_version)
    if not served:
        return None
    resources = []
    for info in served:
        resources.append(_resource(info))
        if info.has_status and not info.create_only:
            resources.append(_subresource(info, "status", ["get", "patch", "update"]))
        if info.has_scale:
            resources.append(
                _subresource(
                    info, "scale", ["get", "patch", "update"], "autoscaling", "v1", "Scale"
                )
            )
        definition = kinds.find(info.key)
        for sub in definition.subresources if definition is not None else ():
            resources.append(
                _subresource(info, sub.name, list(sub.verbs), sub.group, sub.version, sub.kind)
            )
    if group_version == reviews.AUTHENTICATION:
        resources.append(reviews.RESOURCE)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


# -- aggregated discovery (apidiscovery.k8s.io/v2) -----------------------------------
#
# kubectl and client-go since 1.26 ask /api and /apis for every group's
# resources in one document (`Accept: application/json;g=apidiscovery.k8s.io;
# v=v2;as=APIGroupDiscoveryList, ... ,application/json`), which spares them
# a request per group/version. Built from the same per-version lists as the
# legacy documents, so the two always agree.

AGGREGATED_GROUP = "apidiscovery.k8s.io"
AGGREGATED_VERSIONS = ("v2", "v2beta1")


def aggregated_version(accept: str) -> str | None:
    """The apidiscovery version the Accept header asks for first (before any
    plain JSON), or None for the legacy documents."""
    for entry in accept.split(","):
        kind, *params = (part.strip() for part in entry.split(";"))
        values = dict(p.partition("=")[::2] for p in params)
        if kind not in ("application/json", "application/*", "*/*"):
            continue
        if values.get("g") == AGGREGATED_GROUP and values.get("as") == "APIGroupDiscoveryList":
            if values.get("v") in AGGREGATED_VERSIONS:
                return values["v"]
            continue
        if not values.get("as"):
            return None  # plain JSON is preferred to what follows
    return None


def aggregated_content_type(version: str) -> str:
    return f"application/json;g={AGGREGATED_GROUP};v={version};as=APIGroupDiscoveryList"


def _gvk(group_version: str, kind: str) -> dict[str, str]:
    group, _, ver = group_version.rpartition("/")
    return {"group": group, "version": ver, "kind": kind}


def _aggregated_resources(group_version: str) -> list[dict[str, Any]]:
    listed = resource_list(group_version)
    return [] if listed is None else aggregated_resources(group_version, listed)


def aggregated_resources(group_version: str, listed: dict[str, Any]) -> list[dict[str, Any]]:
    """The APIResourceList of a group/version as aggregated discovery lists it
    (also an extension API server's: apiserver/aggregator/discovery.py)."""
    resources: dict[str, dict[str, Any]] = {}
    for entry in listed.get("resources") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        plural, _, sub = entry["name"].partition("/")
        gv = group_version  # a subresource's own group/version when it names one
        if entry.get("version"):
            gv = f"{entry['group']}/{entry['version']}" if entry.get("group") else entry["version"]
        kind = _gvk(gv, str(entry.get("kind") or ""))
        if not sub:
            resource: dict[str, Any] = {
                "resource": plural,
                "responseKind": kind,
                "scope": "Namespaced" if entry.get("namespaced") else "Cluster",
                "singularResource": entry.get("singularName", ""),
                "verbs": entry.get("verbs") or [],
            }
            for key in ("shortNames", "categories"):
                if key in entry:
                    resource[key] = entry[key]
            resources[plural] = resource
            continue
        parent = resources.get(plural)
        if parent is not None:
            parent.setdefault("subresources", []).append(
                {"subresource": sub, "responseKind": kind, "verbs": entry.get("verbs") or []}
            )
    return list(resources.values())


def _aggregated_group(name: str, versions: list[str], version: str) -> dict[str, Any]:
    del version  # the same shape in v2 and v2beta1
    return {
        "metadata": {"name": name} if name else {},
        "versions": [
            {
                "version": v,
                "resources": _aggregated_resources(f"{name}/{v}" if name else v),
                "freshness": "Current",
            }
            for v in versions
        ],
    }


def aggregated(core: bool, version: str) -> dict[str, Any]:
    """The APIGroupDiscoveryList of /api (core=True: the legacy group "")
    or of /apis (every named group, in the order /apis lists them)."""
    if core:
        items = [_aggregated_group("", ["v1"], version)]
    else:
        items = [_aggregated_group(g, vs, version) for g, vs in sorted(_groups().items())]
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"{AGGREGATED_GROUP}/{version}",
        "metadata": {},
        "items": items,
    }
