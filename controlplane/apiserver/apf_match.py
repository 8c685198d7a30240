"""API priority and fairness's configuration, read: which FlowSchema a
request matches and what each PriorityLevelConfiguration allows.

As Kubernetes' APF (k8s.io/apiserver/pkg/util/flowcontrol):

- FlowSchemas are tried in increasing `matchingPrecedence`, ties by name;
  a schema whose level does not exist (Dangling) is skipped; the first whose
  any rule matches wins; with none, the mandatory catch-all applies;
- a rule matches when one of its subjects does (a User by name, a Group the
  requester is in, a ServiceAccount `system:serviceaccount:NS:NAME`; `*`
  for any name) and one of its resourceRules (verbs, apiGroups, resources
  with subresource as `pods/status`, `clusterScope` for cluster-scoped
  requests, `namespaces` for namespaced ones) or nonResourceRules (verbs,
  nonResourceURLs, `/prefix/*` matching below the prefix) matches;
- a Limited level's nominal concurrency limit is
  ceil(serverConcurrencyLimit * nominalConcurrencyShares / sum of every
  Limited level's shares), which it may lend (`lendablePercent`) to and
  borrow (`borrowingLimitPercent`) from other levels (apf_borrowing.py);
  an Exempt level has no limit; `limitResponse`
  Reject refuses at once, Queue holds a request in one of `queues` queues
  (shuffle-sharded by the flow: the schema and the distinguisher, user or
  namespace, over `handSize` queues, the shortest taken), each at most
  `queueLengthLimit` long.

Pure functions and frozen records; flowcontrol.py does the counting.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controlplane.apiserver.apf_borrowing import Bounds

Object = Mapping[str, Any]
SA_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class Digest:
    """What APF looks at in a request."""

    user: str
    groups: tuple[str, ...]
    verb: str  # get, list, watch, create, update, patch, delete, deletecollection
    api_group: str = ""
    resource: str = ""  # plural, with "/subresource"
    namespace: str = ""  # "" for a cluster-scoped object
    resource_request: bool = True
    path: str = ""  # a non-resource request's path


@dataclass(frozen=True)
class Level:
    name: str
    uid: str
    exempt: bool
    limit: int  # nominal concurrency limit (0 for exempt)
    reject: bool  # limitResponse Reject: no queue
    queues: int = 1
    hand_size: int = 1
    queue_length: int = 0
    lower: int = -1  # the least it may lend down to (apf_borrowing; -1: the nominal)
    upper: int = -1  # the most it may borrow up to (-1: the nominal)

    def bounds(self) -> Bounds:
        lower = self.limit if self.lower < 0 else self.lower
        return Bounds(self.limit, lower, max(self.limit if self.upper < 0 else self.upper, lower))


@dataclass(frozen=True)
class Schema:
    name: str
    uid: str
    level: str
    precedence: int
    distinguisher: str  # "", ByUser or ByNamespace
    rules: tuple[Object, ...]


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def subject_matches(subject: Object, digest: Digest) -> bool:
    kind = subject.get("kind")
    if kind == "User":
        name = (subject.get("user") or {}).get("name")
        return name in ("*", digest.user)
    if kind == "Group":
        name = (subject.get("group") or {}).get("name")
        return name == "*" or name in digest.groups
    if kind == "ServiceAccount":
        sa = subject.get("serviceAccount") or {}
        if not digest.user.startswith(SA_PREFIX):
            return False
        ns, _, name = digest.user[len(SA_PREFIX) :].partition(":")
        return sa.get("namespace") == ns and sa.get("name") in ("*", name)
    return False


def _has(values: Any, value: str) -> bool:
    listed = _listed(values)
    return "*" in listed or value in listed


def _resource_rule(rule: Object, d: Digest) -> bool:
    if not (_has(rule.get("verbs"), d.verb) and _has(rule.get("apiGroups"), d.api_group)):
        return False
    if not _has(rule.get("resources"), d.resource):
        return False
    if not d.namespace:
        return rule.get("clusterScope") is True
    return _has(rule.get("namespaces"), d.namespace)


def _url_matches(pattern: str, path: str) -> bool:
    if pattern == "*" or pattern == path:
        return True
    if pattern.endswith("/*"):
        return path.startswith(pattern[:-1]) or path == pattern[:-2]
    return False


def _non_resource_rule(rule: Object, d: Digest) -> bool:
    if not _has(rule.get("verbs"), d.verb):
        return False
    return any(_url_matches(str(p), d.path) for p in _listed(rule.get("nonResourceURLs")))


def rule_matches(rule: Object, d: Digest) -> bool:
    if not any(
        isinstance(s, Mapping) and subject_matches(s, d) for s in _listed(rule.get("subjects"))
    ):
        return False
    if d.resource_request:
        return any(
            isinstance(r, Mapping) and _resource_rule(r, d)
            for r in _listed(rule.get("resourceRules"))
        )
    return any(
        isinstance(r, Mapping) and _non_resource_rule(r, d)
        for r in _listed(rule.get("nonResourceRules"))
    )


def schemas_of(objs: Iterable[Object], levels: Mapping[str, Level]) -> list[Schema]:
    """The FlowSchemas that can match (not Dangling), in matching order."""
    out: list[Schema] = []
    for obj in objs:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        level = str((spec.get("priorityLevelConfiguration") or {}).get("name") or "")
        if level not in levels:
            continue
        precedence = spec.get("matchingPrecedence")
        method = (spec.get("distinguisherMethod") or {}).get("type") or ""
        out.append(Schema(
            name=str(meta.get("name") or ""), uid=str(meta.get("uid") or ""), level=level,
            precedence=precedence if isinstance(precedence, int) else 1000,
            distinguisher=str(method),
            rules=tuple(r for r in _listed(spec.get("rules")) if isinstance(r, Mapping)),
        ))  # fmt: skip
    out.sort(key=lambda s: (s.precedence, s.name))
    return out


def classify(schemas: Sequence[Schema], d: Digest) -> Schema | None:
    for schema in schemas:
        if any(rule_matches(r, d) for r in schema.rules):
            return schema
    return None


def levels_of(objs: Iterable[Object], server_limit: int) -> dict[str, Level]:
    """Every PriorityLevelConfiguration with its nominal limit out of `server_limit`."""
    specs: list[tuple[Object, Object]] = []
    for obj in objs:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        specs.append((meta, spec))
    shares = {
        str(m.get("name")): max(
            int((s.get("limited") or {}).get("nominalConcurrencyShares") or 0), 0
        )
        for m, s in specs
        if s.get("type") == "Limited"
    }
    total = sum(shares.values()) or 1
    out: dict[str, Level] = {}
    for meta, spec in specs:
        name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
        if spec.get("type") == "Exempt":
            out[name] = Level(name, uid, exempt=True, limit=0, reject=False)
            continue
        limited = spec.get("limited") or {}
        response = limited.get("limitResponse") or {}
        queuing = response.get("queuing") or {}
        limit = math.ceil(server_limit * shares.get(name, 0) / total)
        borrowing = limited.get("borrowingLimitPercent")
        bounds = Bounds.of(
            limit, _percent(limited.get("lendablePercent"), 100),
            _percent(borrowing, None) if borrowing is not None else None, server_limit,
        )  # fmt: skip
        out[name] = Level(
            name, uid, exempt=False, limit=limit,
            reject=response.get("type") != "Queue",
            queues=max(int(queuing.get("queues") or 64), 1),
            hand_size=max(int(queuing.get("handSize") or 8), 1),
            queue_length=max(int(queuing.get("queueLengthLimit") or 50), 0),
            lower=bounds.lower, upper=bounds.upper,
        )  # fmt: skip
    return out


def _percent(value: Any, most: int | None) -> int:
    """A percentage field as validation lets it through (0 when unset or odd)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return 0
    return value if most is None else min(value, most)


def flow_key(schema: Schema, d: Digest) -> str:
    """The flow a request belongs to: its schema and distinguisher."""
    if schema.distinguisher == "ByUser":
        return f"{schema.name}/{d.user}"
    if schema.distinguisher == "ByNamespace":
        return f"{schema.name}/{d.namespace}"
    return schema.name


def hand(level: Level, flow: str) -> list[int]:
    """The `handSize` queues a flow may use (shuffle sharding: a deck of
    `queues` cards dealt from the flow's hash)."""
    value = int.from_bytes(hashlib.sha256(flow.encode()).digest()[:8], "big")
    deck = list(range(level.queues))
    out: list[int] = []
    for _ in range(min(level.hand_size, level.queues)):
        value, index = divmod(value, len(deck))
        out.append(deck.pop(index))
    return out
