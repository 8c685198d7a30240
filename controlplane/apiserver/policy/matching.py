"""Whether a policy's matchConstraints (and a binding's matchResources)
cover a request, as Kubernetes' admission/plugin/policy/matching does:
resourceRules minus excludeResourceRules (operations, apiGroups,
apiVersions, resources with subresources, resourceNames, scope),
namespaceSelector, objectSelector; matchPolicy Equivalent also matches the
kind under the other apiVersions it is served in. The selectors are matched
as for webhooks (webhooks/matching.py), as Kubernetes' policy matcher reuses
the webhook predicates."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Object = dict[str, Any]


@dataclass(frozen=True)
class Request:
    operation: str
    group: str
    version: str
    resource: str
    subresource: str
    namespace: str
    name: str
    namespaced: bool
    also_versions: tuple[str, ...] = ()


def _listed(values: Iterable[Any], value: str) -> bool:
    return any(v == "*" or v == value for v in values)


def _resource(patterns: Iterable[Any], resource: str, subresource: str) -> bool:
    """`pods`: the resource only; `pods/*`: its subresources; `*/scale`: every
    scale subresource; `*/*`: everything (Kubernetes' RuleWithOperations)."""
    for pattern in patterns:
        res, slash, sub = str(pattern).partition("/")
        if res not in ("*", resource):
            continue
        if not slash:
            ok = not subresource
        elif sub == "*":
            ok = bool(subresource) or res == "*"
        else:
            ok = sub == subresource
        if ok:
            return True
    return False


def _rule(rule: Mapping[str, Any], r: Request, group: str, version: str) -> bool:
    scope = rule.get("scope") or "*"
    cluster = r.resource == "namespaces" or not r.namespaced
    names = rule.get("resourceNames") or []
    return (
        _listed(rule.get("operations") or (), r.operation)
        and _listed(rule.get("apiGroups") or (), group)
        and _listed(rule.get("apiVersions") or (), version)
        and _resource(rule.get("resources") or (), r.resource, r.subresource)
        and (scope == "*" or (scope == "Cluster") == cluster)
        and (not names or r.name in names)
    )


def _versions(r: Request, policy: str) -> list[tuple[str, str]]:
    found = [(r.group, r.version)]
    if policy != "Exact":
        for api_version in r.also_versions:
            group, _, version = api_version.rpartition("/")
            found.append((group, version))
    return found


def rules_match(match: Mapping[str, Any], r: Request, empty_matches: bool = False) -> bool:
    rules = [x for x in match.get("resourceRules") or [] if isinstance(x, Mapping)]
    versions = _versions(r, str(match.get("matchPolicy") or "Equivalent"))
    if not rules and not empty_matches:
        return False
    if rules and not any(_rule(x, r, g, v) for x in rules for g, v in versions):
        return False
    excluded = [x for x in match.get("excludeResourceRules") or [] if isinstance(x, Mapping)]
    return not any(_rule(x, r, r.group, r.version) for x in excluded)
