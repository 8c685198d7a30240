"""URL paths of the Kubernetes API, resolved against the kind table.

`/api/v1/...` and `/apis/<group>/<version>/...`, then optionally
`namespaces/<ns>/`, then `<plural>[/<name>[/<subresource>]]`. The kind table
(controlplane.api.kinds) is read at every call, so kinds added at run time
(CRDs) are served at once; its index of the kinds served at each
group/version is built once per table, not per request. An unknown group, version or resource is a
NotFound naming it. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from controlplane.api import kinds
from controlplane.api.kinds import KindInfo
from controlplane.api.kinds.definition import Conversion
from controlplane.apiserver.rest import conversion
from controlplane.client.errors import NotFound

# Subresources of a namespace itself (namespaces/<name>/<sub>), as opposed
# to namespaces/<ns>/<plural>.
NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True)
class Target:
    """What a resource URL names."""

    info: KindInfo
    group_version: str  # as in the URL: "v1", "apps/v1"
    namespace: str  # "" for cluster-scoped kinds or all namespaces
    name: str = ""
    subresource: str = ""
    proxy_path: str = ""  # nodes/<name>/proxy/<path>: "/<path>" (rest/nodeproxy.py)

    @property
    def group(self) -> str:
        return self.group_version.rpartition("/")[0]

    @cached_property  # read several times per request: looked up once
    def conversion(self) -> Conversion | None:
        """How objects change shape between the stored version and the URL's."""
        return conversion.find(self.info.key, self.group_version)


def every_kind() -> tuple[KindInfo, ...]:
    return kinds.all_kinds()


def served_versions(info: KindInfo) -> tuple[str, ...]:
    """Every group/version a kind is served at, its own first."""
    definition = kinds.find(info.key)
    if definition is None:
        return (info.api_version, *info.also_api_versions)
    return definition.served_versions()


def kinds_at(group_version: str) -> tuple[KindInfo, ...]:
    return kinds.served_at(group_version)


def resolve(segments: list[str]) -> Target | None:
    """The target of a path split on "/" (no empty parts); None when the path
    is no resource path (a discovery document, or something else)."""
    if len(segments) >= 3 and segments[0] == "api":
        group_version, rest = segments[1], segments[2:]
    elif len(segments) >= 4 and segments[0] == "apis":
        group_version, rest = f"{segments[1]}/{segments[2]}", segments[3:]
    else:
        return None
    served = kinds_at(group_version)
    if not served:
        raise NotFound(f"the server could not find the requested resource: no API {group_version}")
    namespace = ""
    namespaced_path = rest[0] == "namespaces" and len(rest) >= 3
    if namespaced_path and not (len(rest) == 3 and rest[2] in NAMESPACE_SUBRESOURCES):
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3 and rest[0] == "nodes" and rest[2] == "proxy" and group_version == "v1":
        info = next(i for i in served if i.plural == "nodes")
        return Target(info, group_version, "", rest[1], "proxy", "/" + "/".join(rest[3:]))
    if len(rest) > 3:
        raise NotFound(f"the server could not find the requested resource: {'/'.join(rest)}")
    plural = rest[0]
    for info in served:
        if info.plural == plural:
            break
    else:
        raise NotFound(
            f"the server could not find the requested resource: no resource {plural!r} "
            f"in {group_version}"
        )
    if namespace and not info.namespaced:
        raise NotFound(f"{info.resource} are cluster-scoped, not in a namespace")
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    return Target(info, group_version, namespace, name, subresource)
