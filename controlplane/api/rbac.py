"""RBAC's rules, as Kubernetes' rbac.authorization.k8s.io/v1 defines them.

`PolicyRule` is one rule of a Role or ClusterRole (verbs, apiGroups,
resources with `resource/subresource` and `*/subresource`, resourceNames,
nonResourceURLs with a trailing `*` as prefix match). `Attributes` is what
a request asks for. `allows(rules, attrs)` is RBAC's RuleAllows; `covers`
is its escalation check (every permission the requested rules grant is
held by the owner's rules, with `*` matched only by `*`). `problems`
validates the four RBAC kinds.

Pure functions over plain data: no storage, no server, no transport.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from controlplane.api import jsoncodec
from controlplane.api.selectors import SelectorError, from_structured

GROUP = "rbac.authorization.k8s.io"
ALL = "*"
SUBJECT_KINDS = ("User", "Group", "ServiceAccount")


@dataclass(frozen=True)
class PolicyRule:
    verbs: frozenset[str]
    api_groups: frozenset[str] = frozenset()
    resources: frozenset[str] = frozenset()
    resource_names: frozenset[str] = frozenset()
    non_resource_urls: frozenset[str] = frozenset()

    @staticmethod
    def parse(rule: Mapping[str, Any]) -> PolicyRule:
        def field(name: str) -> frozenset[str]:
            return frozenset(str(v) for v in rule.get(name) or [])

        return PolicyRule(
            field("verbs"),
            field("apiGroups"),
            field("resources"),
            field("resourceNames"),
            field("nonResourceURLs"),
        )

    def to_dict(self) -> dict[str, list[str]]:
        out = {"verbs": sorted(self.verbs)}
        for key, values in (("apiGroups", self.api_groups), ("resources", self.resources),
                            ("resourceNames", self.resource_names),
                            ("nonResourceURLs", self.non_resource_urls)):  # fmt: skip
            if values:
                out[key] = sorted(values)
        return out


def parse_rules(rules: Any) -> tuple[PolicyRule, ...]:
    return tuple(PolicyRule.parse(r) for r in rules or [] if isinstance(r, dict))


class Attributes(NamedTuple):
    """One request: a resource request (resource set) or a non-resource one (path
    set). A tuple: cheap to build and hash, once per request."""

    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""

    @property
    def is_resource(self) -> bool:
        return not self.path


def _has(values: frozenset[str], value: str) -> bool:
    return ALL in values or value in values


def _resource_matches(rule: PolicyRule, resource: str, subresource: str) -> bool:
    combined = f"{resource}/{subresource}" if subresource else resource
    for r in rule.resources:
        if r in (ALL, combined):
            return True
        if subresource and r == f"*/{subresource}":
            return True
    return False


def _url_matches(rule: PolicyRule, path: str) -> bool:
    for url in rule.non_resource_urls:
        if url in (ALL, path):
            return True
        if url.endswith("*") and path.startswith(url[:-1]):
            return True
    return False


def rule_allows(rule: PolicyRule, a: Attributes) -> bool:
    if not _has(rule.verbs, a.verb):
        return False
    if not a.is_resource:
        return _url_matches(rule, a.path)
    if not rule.resources or not _has(rule.api_groups, a.group):
        return False
    if not _resource_matches(rule, a.resource, a.subresource):
        return False
    return not rule.resource_names or a.name in rule.resource_names


def allows(rules: Iterable[PolicyRule], a: Attributes) -> bool:
    return any(rule_allows(r, a) for r in rules)


def _atoms(rule: PolicyRule) -> Iterator[Attributes]:
    """Every single permission a rule grants (wildcards kept as `*`)."""
    for verb in rule.verbs:
        for url in rule.non_resource_urls:
            yield Attributes(verb, path=url)
        for group in rule.api_groups or {""} if rule.resources else ():
            for resource in rule.resources:
                base, _, sub = resource.partition("/")
                for name in rule.resource_names or {""}:
                    yield Attributes(verb, group, base, sub, name=name)


def _owner_allows(owner: PolicyRule, atom: Attributes) -> bool:
    """rule_allows, but a requested `*` is covered only by an owned `*`."""
    if not _has(owner.verbs, atom.verb):
        return False
    if not atom.is_resource:
        return ALL in owner.non_resource_urls or _url_matches(owner, atom.path)
    if not owner.resources or not _has(owner.api_groups, atom.group):
        return False
    if not _resource_matches(owner, atom.resource, atom.subresource):
        return False
    if not owner.resource_names:
        return True
    return bool(atom.name) and atom.name in owner.resource_names


def covers(owner: Iterable[PolicyRule], requested: Iterable[PolicyRule]) -> list[PolicyRule]:
    """The requested rules the owner's rules do not cover ([] when covered)."""
    owned = list(owner)
    missing = []
    for rule in requested:
        if not all(any(_owner_allows(o, atom) for o in owned) for atom in _atoms(rule)):
            missing.append(rule)
    return missing


# -- aggregation ------------------------------------------------------------------


def aggregated_rules(role: Mapping[str, Any], cluster_roles: Iterable[Mapping[str, Any]]
                     ) -> list[dict[str, Any]] | None:  # fmt: skip
    """The rules of an aggregated ClusterRole: those of every other ClusterRole
    whose labels match one of its clusterRoleSelectors, in name order, each
    rule once. None when `role` does not aggregate."""
    aggregation = role.get("aggregationRule")
    if not isinstance(aggregation, dict):
        return None
    selectors = []
    for selector in aggregation.get("clusterRoleSelectors") or []:
        try:
            selectors.append(from_structured(selector))
        except SelectorError:
            continue
    me = (role.get("metadata") or {}).get("name")
    rules: list[dict[str, Any]] = []
    seen: set[str] = set()
    others = sorted(cluster_roles, key=lambda r: str((r.get("metadata") or {}).get("name")))
    for other in others:
        meta = other.get("metadata") or {}
        if meta.get("name") == me:
            continue
        labels = meta.get("labels") or {}
        if not any(s.matches(labels) for s in selectors if not s.empty()):
            continue
        for rule in other.get("rules") or []:
            key = jsoncodec.dumps(rule).decode()
            if key not in seen:
                seen.add(key)
                rules.append(rule)
    return rules


# -- validation -------------------------------------------------------------------


def _strings(problems: list[str], path: str, value: Any, required: bool = False) -> None:
    if value is None or value == []:
        if required:
            problems.append(f"{path}: required (at least one)")
        return
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(f"{path}: must be a list of strings")


def _objects(
    problems: list[str], obj: Mapping[str, Any], field: str
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(`field[i]`, item) for each object of the optional list obj[field];
    a value that is not a list, or an item not an object, is a problem."""
    value = obj.get(field)
    if value is None:
        return
    if not isinstance(value, list):
        problems.append(f"{field}: must be a list")
        return
    for i, item in enumerate(value):
        if isinstance(item, dict):
            yield f"{field}[{i}]", item
        else:
            problems.append(f"{field}[{i}]: must be an object")


def _rules(problems: list[str], obj: Mapping[str, Any], cluster: bool) -> None:
    for path, rule in _objects(problems, obj, "rules"):
        _strings(problems, f"{path}.verbs", rule.get("verbs"), required=True)
        for key in ("apiGroups", "resources", "resourceNames", "nonResourceURLs"):
            _strings(problems, f"{path}.{key}", rule.get(key))
        urls, resources = rule.get("nonResourceURLs"), rule.get("resources")
        if urls and not cluster:
            problems.append(f"{path}.nonResourceURLs: only ClusterRoles may have them")
        if urls and resources:
            problems.append(f"{path}: a rule has either resources or nonResourceURLs, not both")
        if not urls and not resources:
            problems.append(f"{path}.resources: required (or nonResourceURLs in a ClusterRole)")
        if resources and rule.get("apiGroups") is None:
            problems.append(f'{path}.apiGroups: required with resources ("" is the core group)')


def _binding(problems: list[str], obj: Mapping[str, Any], old: Mapping[str, Any] | None,
             cluster: bool) -> None:  # fmt: skip
    ref = obj.get("roleRef")
    if not isinstance(ref, dict):
        problems.append("roleRef: required")
    else:
        if ref.get("apiGroup") != GROUP:
            problems.append(f"roleRef.apiGroup: must be {GROUP!r}")
        kinds = ("ClusterRole",) if cluster else ("Role", "ClusterRole")
        if ref.get("kind") not in kinds:
            problems.append(f"roleRef.kind: unsupported value {ref.get('kind')!r}: "
                            f"supported values: {', '.join(kinds)}")  # fmt: skip
        if not isinstance(ref.get("name"), str) or not ref.get("name"):
            problems.append("roleRef.name: required")
        if old is not None and old.get("roleRef") != ref:
            problems.append("roleRef: field is immutable (delete and recreate the binding)")
    for path, subject in _objects(problems, obj, "subjects"):
        kind = subject.get("kind")
        if kind not in SUBJECT_KINDS:
            problems.append(f"{path}.kind: unsupported value {kind!r}: supported values: "
                            f"{', '.join(SUBJECT_KINDS)}")  # fmt: skip
        if not isinstance(subject.get("name"), str) or not subject.get("name"):
            problems.append(f"{path}.name: required")
        if kind == "ServiceAccount" and cluster and not subject.get("namespace"):
            problems.append(f"{path}.namespace: required for a ServiceAccount")


def problems(kind: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[str]:
    """Every problem with an RBAC object as `path: problem`."""
    found: list[str] = []
    if kind in ("Role", "ClusterRole"):
        _rules(found, obj, kind == "ClusterRole")
        aggregation = obj.get("aggregationRule")
        if aggregation is not None:
            selectors = aggregation.get("clusterRoleSelectors") if isinstance(
                aggregation, dict) else None  # fmt: skip
            if kind != "ClusterRole":
                found.append("aggregationRule: only ClusterRoles aggregate")
            elif not isinstance(selectors, list):
                found.append("aggregationRule.clusterRoleSelectors: must be a list")
    elif kind in ("RoleBinding", "ClusterRoleBinding"):
        _binding(found, obj, old, kind == "ClusterRoleBinding")
    return found


def is_path_segment_name(name: str) -> bool:
    """RBAC object names: any path segment (`system:node` is one)."""
    return bool(name) and name not in (".", "..") and "/" not in name and "%" not in name
