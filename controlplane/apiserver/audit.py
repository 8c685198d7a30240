"""The audit log: one JSON line per request, off by default, rotated by size.

Each line is Kubernetes' audit Event in small (audit.k8s.io/v1 field
names): stage ResponseComplete, level, auditID, verb, user {username,
groups}, objectRef {resource, apiGroup, namespace, name, subresource},
responseStatus {code}, requestReceivedTimestamp, stageTimestamp and
latencyMs; at level Request and RequestResponse also the requestObject
(bodies over 64 KiB are left out). Which requests are logged at which level
is decided by a policy (audit.k8s.io/v1 Policy: the first rule whose users,
userGroups, verbs, resources and namespaces all match gives the level; no
rule matching means None). Without a policy every request is logged at
Metadata.

The file is rotated when it passes `max_bytes` (path.1, path.2, ... up to
`backups`, the oldest dropped). Writing never fails a request: an I/O error
is logged once and the line is lost. This module never decides anything
about the request itself.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from controlplane.apiserver.auth import Identity
from machinery.atomicfile import move_aside
from machinery.rfc3339 import format_micro_datetime

log = logging.getLogger(__name__)

LEVELS = ("None", "Metadata", "Request", "RequestResponse")
MAX_REQUEST_OBJECT = 64 * 1024


class PolicyError(ValueError):
    """An audit policy file that cannot be used; the message names the field."""


@dataclass(frozen=True)
class Rule:
    level: str
    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    verbs: frozenset[str] = frozenset()
    resources: frozenset[tuple[str, str]] = frozenset()  # (group, resource); "*" = any
    namespaces: frozenset[str] = frozenset()

    def matches(self, who: Identity, verb: str, group: str, resource: str, ns: str) -> bool:
        if self.users and who.user not in self.users:
            return False
        if self.groups and not self.groups & set(who.groups):
            return False
        if self.verbs and verb not in self.verbs:
            return False
        if self.namespaces and ns not in self.namespaces:
            return False
        return not self.resources or any(
            g in (group, "*") and r in (resource, "*") for g, r in self.resources
        )


@dataclass(frozen=True)
class Policy:
    rules: tuple[Rule, ...] = field(default_factory=lambda: (Rule("Metadata"),))

    def level(self, who: Identity, verb: str, group: str, resource: str, ns: str) -> str:
        for rule in self.rules:
            if rule.matches(who, verb, group, resource, ns):
                return rule.level
        return "None"


def load_policy(path: Path) -> Policy:
    """An audit.k8s.io/v1 Policy file (the fields this log knows)."""
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise PolicyError(f"audit policy {path}: {err}") from err
    if not isinstance(doc, dict) or doc.get("kind") != "Policy":
        raise PolicyError(f"audit policy {path}: kind: must be Policy")
    rules = []
    for i, raw in enumerate(doc.get("rules") or []):
        where = f"audit policy {path}: rules[{i}]"
        if not isinstance(raw, dict) or raw.get("level") not in LEVELS:
            raise PolicyError(f"{where}.level: must be one of {', '.join(LEVELS)}")
        resources = set()
        for j, entry in enumerate(raw.get("resources") or []):
            if not isinstance(entry, dict):
                raise PolicyError(f"{where}.resources[{j}]: must be an object")
            group = str(entry.get("group", ""))
            for resource in entry.get("resources") or ["*"]:
                resources.add((group, str(resource)))
        rules.append(Rule(
            str(raw["level"]),
            frozenset(str(u) for u in raw.get("users") or []),
            frozenset(str(g) for g in raw.get("userGroups") or []),
            frozenset(str(v) for v in raw.get("verbs") or []),
            frozenset(resources),
            frozenset(str(n) for n in raw.get("namespaces") or []),
        ))  # fmt: skip
    return Policy(tuple(rules))


class AuditLog:
    """See the module docstring. Thread-safe."""

    def __init__(
        self, path: Path, max_bytes: int = 100 << 20, backups: int = 5, policy: Policy | None = None
    ) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups
        self.policy = policy or Policy()
        self._lock = threading.Lock()
        self._failed = False
        path.parent.mkdir(parents=True, exist_ok=True)

    def level(self, who: Identity, verb: str, group: str, resource: str, ns: str) -> str:
        return self.policy.level(who, verb, group, resource, ns)

    def record(
        self,
        who: Identity,
        verb: str,
        object_ref: Mapping[str, str],
        code: int,
        received: datetime.datetime,
        latency_ms: float,
        request_object: bytes | None = None,
    ) -> None:
        level = self.policy.level(who, verb, object_ref.get("apiGroup", ""),
                                  object_ref.get("resource", ""),
                                  object_ref.get("namespace", ""))  # fmt: skip
        if level == "None":
            return
        event: dict[str, Any] = {
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": level,
            "auditID": str(uuid.uuid4()),
            "stage": "ResponseComplete",
            "verb": verb,
            "user": {"username": who.user, "groups": list(who.groups)},
            "objectRef": {k: v for k, v in object_ref.items() if v},
            "responseStatus": {"code": code},
            "requestReceivedTimestamp": format_micro_datetime(received),
            "stageTimestamp": format_micro_datetime(datetime.datetime.now(datetime.UTC)),
            "latencyMs": round(latency_ms, 3),
        }
        if level != "Metadata" and request_object and len(request_object) <= MAX_REQUEST_OBJECT:
            try:
                event["requestObject"] = json.loads(request_object)
            except ValueError:
                pass
        self._write(json.dumps(event, separators=(",", ":")) + "\n")

    def _write(self, line: str) -> None:
        with self._lock:
            try:
                if self.path.exists() and self.path.stat().st_size + len(line) > self.max_bytes:
                    self._rotate()
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                with os.fdopen(fd, "a") as f:
                    f.write(line)
                self._failed = False
            except OSError as err:
                if not self._failed:
                    log.error("audit log %s: cannot write (%s); lines are lost", self.path, err)
                self._failed = True

    def _rotate(self) -> None:
        if self.backups <= 0:
            self.path.unlink(missing_ok=True)
            return
        oldest = self.path.with_name(f"{self.path.name}.{self.backups}")
        oldest.unlink(missing_ok=True)
        for n in range(self.backups - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{n}")
            if older.exists():
                move_aside(older, self.path.with_name(f"{self.path.name}.{n + 1}"))
        move_aside(self.path, self.path.with_name(f"{self.path.name}.1"))


def rotated(path: Path) -> Sequence[Path]:
    """The log and its rotated files, newest first."""
    files = [path] if path.exists() else []
    n = 1
    while path.with_name(f"{path.name}.{n}").exists():
        files.append(path.with_name(f"{path.name}.{n}"))
        n += 1
    return files
