"""Which webhooks a request goes to (webhooks/matching.py), as Kubernetes'
webhook rule matcher: operations, groups, versions, resources with
subresources and wildcards, scope, matchPolicy and label selectors."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.apiserver.webhooks.matching import Resource, rules_match, selector_matches

POD = Resource("", "v1", "pods", "", "team", True)
POD_STATUS = Resource("", "v1", "pods", "status", "team", True)
POD_EXEC = Resource("", "v1", "pods", "exec", "team", True)
NODE = Resource("", "v1", "nodes", "", "", False)
NAMESPACE = Resource("", "v1", "namespaces", "", "", False)
DEPLOYMENT = Resource("apps", "v1", "deployments", "", "team", True)


def hook(resources: list[str], operations: tuple[str, ...] = ("*",), groups: tuple[str, ...] = ("*",),
         versions: tuple[str, ...] = ("*",), scope: str = "*", **fields: Any) -> dict[str, Any]:  # fmt: skip
    rule = {"operations": list(operations), "apiGroups": list(groups),
            "apiVersions": list(versions), "resources": resources, "scope": scope}  # fmt: skip
    return {"rules": [rule], **fields}


@pytest.mark.parametrize(
    ("resources", "resource", "matched"),
    [
        (["pods"], POD, True),
        (["pods"], POD_STATUS, False),
        (["pods/status"], POD_STATUS, True),
        (["pods/status"], POD, False),
        (["pods/*"], POD_EXEC, True),
        (["*"], POD, True),
        (["*"], POD_STATUS, False),
        (["*/*"], POD_STATUS, True),
        (["*/*"], NODE, True),
        (["*/status"], POD_STATUS, True),
        (["*/status"], POD_EXEC, False),
        (["deployments"], POD, False),
    ],
)
def test_resources_and_subresources(
    resources: list[str], resource: Resource, matched: bool
) -> None:
    assert (rules_match(hook(resources), "UPDATE", resource) is not None) is matched


def test_operations_groups_versions() -> None:
    assert rules_match(hook(["pods"], ("CONNECT",)), "CONNECT", POD_EXEC) is None  # pods only
    assert rules_match(hook(["pods/exec"], ("CONNECT",)), "CONNECT", POD_EXEC) is not None
    assert rules_match(hook(["pods"], ("CREATE",)), "DELETE", POD) is None
    assert rules_match(hook(["pods"], groups=("apps",)), "CREATE", POD) is None
    assert rules_match(hook(["pods"], groups=("",), versions=("v1",)), "CREATE", POD) == ("", "v1")
    assert rules_match(hook(["pods"], versions=("v2",)), "CREATE", POD) is None


def test_scope() -> None:
    assert rules_match(hook(["*"], scope="Namespaced"), "CREATE", POD) is not None
    assert rules_match(hook(["*"], scope="Namespaced"), "CREATE", NODE) is None
    assert rules_match(hook(["*"], scope="Namespaced"), "CREATE", NAMESPACE) is None
    assert rules_match(hook(["*"], scope="Cluster"), "CREATE", NAMESPACE) is not None
    assert rules_match(hook(["*"], scope="Cluster"), "CREATE", POD) is None


def test_match_policy() -> None:
    extensions = hook(["deployments"], groups=("extensions",), versions=("v1beta1",))
    assert rules_match(extensions, "CREATE", DEPLOYMENT) == ("extensions", "v1beta1")
    assert rules_match({**extensions, "matchPolicy": "Exact"}, "CREATE", DEPLOYMENT) is None
    own_first = hook(["deployments"])
    assert rules_match(own_first, "CREATE", DEPLOYMENT) == ("apps", "v1")
    multi = Resource("example.com", "v2", "widgets", "", "team", True, ("example.com/v1",))
    v1_rule = hook(["widgets"], versions=("v1",))
    assert rules_match(v1_rule, "CREATE", multi) == ("example.com", "v1")


def test_selectors() -> None:
    sel = {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}
    assert selector_matches(sel, ({"env": "prod"},))
    assert selector_matches(sel, (None, {"env": "prod"}))  # the old object's labels
    assert not selector_matches(sel, ({"env": "dev"}, None))
    assert selector_matches({}, (None,))  # empty: everything
    assert selector_matches(None, ({},))
