"""Which webhooks a request goes to, as kube-apiserver's webhook matcher
(admission/plugin/webhook/predicates) decides:

- `rules`: operations (or `*`), apiGroups, apiVersions, resources (`pods`,
  `pods/status`, `pods/*`, `*`, `*/*`, `*/status`) and scope (`*`,
  `Cluster`: cluster-scoped resources and namespaces themselves,
  `Namespaced`: the rest);
- `matchPolicy`: Exact matches the request's own group/version/resource;
  Equivalent (the default) also the same resource served under another
  group or version (deployments in apps/v1 matched by an `extensions`
  v1beta1 rule, events in events.k8s.io/v1 by a core v1 rule, a custom
  resource's other served versions); the object is sent in the version it
  was written in, named so;
- `namespaceSelector`: the labels of the request's namespace (of a
  Namespace written, its own labels); cluster-scoped requests always match;
- `objectSelector`: the new or the old object's labels.

Requests on the webhook configurations themselves (and on admission
policies) never go to webhooks, as in Kubernetes, so a broken webhook
cannot lock its own fix out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from controlplane.api.selectors import SelectorError, from_structured

Object = dict[str, Any]
EXEMPT_GROUP = "admissionregistration.k8s.io"

# A resource's other names in Kubernetes' history: (group, resource) -> the
# other (group, version)s that serve the same objects (the equivalent
# resource registry of kube-apiserver, for the kinds skiff serves).
_HISTORY: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("apps", "deployments"): (("extensions", "v1beta1"), ("apps", "v1beta1"), ("apps", "v1beta2")),
    ("apps", "daemonsets"): (("extensions", "v1beta1"), ("apps", "v1beta2")),
    ("apps", "replicasets"): (("extensions", "v1beta1"), ("apps", "v1beta2")),
    ("apps", "statefulsets"): (("apps", "v1beta1"), ("apps", "v1beta2")),
    ("apps", "controllerrevisions"): (("apps", "v1beta1"), ("apps", "v1beta2")),
    ("networking.k8s.io", "networkpolicies"): (("extensions", "v1beta1"),),
    ("networking.k8s.io", "ingresses"): (
        ("extensions", "v1beta1"),
        ("networking.k8s.io", "v1beta1"),
    ),
    ("batch", "cronjobs"): (("batch", "v1beta1"),),
    ("policy", "poddisruptionbudgets"): (("policy", "v1beta1"),),
    ("autoscaling", "horizontalpodautoscalers"): (
        ("autoscaling", "v1"),
        ("autoscaling", "v2"),
        ("autoscaling", "v2beta1"),
        ("autoscaling", "v2beta2"),
    ),
    ("", "events"): (("events.k8s.io", "v1"), ("events.k8s.io", "v1beta1")),
    ("events.k8s.io", "events"): (("", "v1"),),
}


@dataclass(frozen=True)
class Resource:
    """What a request is about: group, version and resource (plural) as
    written, its subresource, namespace, and whether the kind is namespaced."""

    group: str
    version: str
    resource: str
    subresource: str
    namespace: str
    namespaced: bool
    also_versions: tuple[str, ...] = ()  # api versions the same objects are served in

    def equivalents(self) -> list[tuple[str, str]]:
        """(group, version) pairs serving the same objects, the request's own first."""
        found = [(self.group, self.version)]
        for api_version in self.also_versions:
            group, _, version = api_version.rpartition("/")
            found.append((group, version))
        found += _HISTORY.get((self.group, self.resource), ())
        return list(dict.fromkeys(found))


def exempt(group: str) -> bool:
    return group == EXEMPT_GROUP


def _listed(values: Iterable[Any], value: str) -> bool:
    return any(v == "*" or v == value for v in values)


def _resource_listed(patterns: Iterable[Any], resource: str, subresource: str) -> bool:
    for pattern in patterns:
        res, _, sub = str(pattern).partition("/")
        if (res in ("*", resource)) and (sub in ("*", subresource)):
            return True
    return False


def _scope(rule: Mapping[str, Any], r: Resource) -> bool:
    scope = rule.get("scope") or "*"
    cluster = r.resource == "namespaces" or not r.namespaced
    if scope == "Namespaced":
        return not cluster
    if scope == "Cluster":
        return cluster
    return True


def rule_matches(
    rule: Mapping[str, Any], operation: str, r: Resource, group: str, version: str
) -> bool:
    """Whether `rule` covers `operation` on r's resource served as group/version."""
    return (
        _listed(rule.get("operations") or (), operation)
        and _listed(rule.get("apiGroups") or (), group)
        and _listed(rule.get("apiVersions") or (), version)
        and _resource_listed(rule.get("resources") or (), r.resource, r.subresource)
        and _scope(rule, r)
    )


def rules_match(hook: Mapping[str, Any], operation: str, r: Resource) -> tuple[str, str] | None:
    """The (group, version) the hook's rules match the request under, or None:
    the request's own, or with matchPolicy Equivalent an equivalent one."""
    rules = [rule for rule in hook.get("rules") or () if isinstance(rule, Mapping)]
    candidates = r.equivalents()
    if hook.get("matchPolicy") == "Exact":
        candidates = candidates[:1]
    for group, version in candidates:
        if any(rule_matches(rule, operation, r, group, version) for rule in rules):
            return group, version
    return None


def selector_matches(selector: Any, label_sets: Iterable[Mapping[str, str] | None]) -> bool:
    """Whether a LabelSelector (empty: everything) matches any of the label sets
    (None: no object, never matched by a non-empty selector)."""
    try:
        parsed = from_structured(selector if isinstance(selector, Mapping) else None)
    except SelectorError:
        return False
    if parsed.empty():
        return True
    return any(labels is not None and parsed.matches(labels) for labels in label_sets)


def labels_of(obj: Object | None) -> Mapping[str, str] | None:
    if obj is None:
        return None
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, Mapping) else {}
