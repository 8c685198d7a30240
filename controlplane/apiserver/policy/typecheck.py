"""The ValidatingAdmissionPolicy status controller: `status.typeChecking`
(Kubernetes' admission/plugin/policy/validating TypeChecker), written
when a policy's generation is new.

Each validation's (and messageExpression's, variable's, matchCondition's,
auditAnnotation's) field references from `object` and `oldObject` are
checked against the schema of every kind the policy's resourceRules name
exactly (no wildcards); a field the kind does not have is an expression
warning in Kubernetes' words: `apps/v1, Kind=Deployment: ERROR:
<input>:1:12: undefined field 'replicass'` with the caret line. Fields
under a free-form part of a schema are not judged.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from controlplane.api import kinds
from controlplane.api.cel import ast
from controlplane.api.cel.engine import CompileError
from controlplane.api.cel.match_conditions import VARIABLES
from controlplane.api.cel.programs import program
from controlplane.api.kinds import registry
from controlplane.api.schema import Type
from machinery.apierrors import ApiError

log = logging.getLogger(__name__)
Object = dict[str, Any]
_FREE = ("object", "map", "string", "integer", "number", "boolean", "time", "quantity",
         "int-or-string")  # fmt: skip


class TypeChecker:
    def __init__(self, registry: Any) -> None:
        self.registry = registry

    def check(self, policy: Object) -> None:
        """Cache hook: write the status of a policy whose generation is new (off
        the watch's thread: the write goes through the registry)."""
        meta = policy.get("metadata") or {}
        status = policy.get("status") or {}
        if status.get("observedGeneration") == meta.get("generation"):
            return
        threading.Thread(target=self._write, args=(policy,), name="vap-typecheck",
                         daemon=True).start()  # fmt: skip

    def _write(self, policy: Object) -> None:
        meta = policy.get("metadata") or {}
        status: Object = {"observedGeneration": meta.get("generation"),
                  "typeChecking": {"expressionWarnings": warnings(policy)},
                  "conditions": []}  # fmt: skip
        try:
            self.registry.update(
                "ValidatingAdmissionPolicy",
                {**policy, "status": status},
                subresource="status",
            )
        except ApiError as err:  # a newer generation follows with its own event
            log.debug("ValidatingAdmissionPolicy %s status: %s", meta.get("name"), err)


def _expressions(spec: Object) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for i, v in enumerate(spec.get("validations") or []):
        found.append((f"spec.validations[{i}].expression", str(v.get("expression") or "")))
        if v.get("messageExpression"):
            found.append((f"spec.validations[{i}].messageExpression", str(v["messageExpression"])))
    for i, v in enumerate(spec.get("variables") or []):
        found.append((f"spec.variables[{i}].expression", str(v.get("expression") or "")))
    for i, v in enumerate(spec.get("matchConditions") or []):
        found.append((f"spec.matchConditions[{i}].expression", str(v.get("expression") or "")))
    for i, v in enumerate(spec.get("auditAnnotations") or []):
        found.append((f"spec.auditAnnotations[{i}].valueExpression",
                      str(v.get("valueExpression") or "")))  # fmt: skip
    return found


def _kinds(spec: Object) -> list[tuple[str, kinds.KindInfo]]:
    """(group/version, kind row) of every kind the resourceRules name exactly."""
    found: list[tuple[str, kinds.KindInfo]] = []
    for rule in (spec.get("matchConstraints") or {}).get("resourceRules") or []:
        for group in rule.get("apiGroups") or []:
            for version in rule.get("apiVersions") or []:
                for resource in rule.get("resources") or []:
                    if "*" in (group, version) or "*" in resource or "/" in resource:
                        continue
                    for info in kinds.all_kinds():
                        if info.plural == resource and info.group == group:
                            found.append((f"{group}/{version}" if group else version, info))
    return found


def warnings(policy: Object) -> list[Object]:
    """status.typeChecking.expressionWarnings of a policy."""
    spec = policy.get("spec") or {}
    targets = _kinds(spec)
    if not targets:
        return []
    types = registry.schema_types()
    out: list[Object] = []
    for field_ref, expression in _expressions(spec):
        try:
            root, positions = ast.parse_checked(program(expression, VARIABLES).ast())
        except (CompileError, ValueError):
            continue
        problems: list[str] = []
        for gv, info in targets:
            own = registry.kind_types().get((info.group, info.version, info.kind))
            if own is None:
                continue
            for node, name in _undefined(root, types, own):
                at = positions.get(node.id, 0)
                caret = " | " + "." * at + "^"
                problems.append(f"{gv}, Kind={info.kind}: ERROR: <input>:1:{at + 1}: "
                                f"undefined field '{name}'\n | {expression}\n{caret}")  # fmt: skip
        if problems:
            out.append({"fieldRef": field_ref, "warning": "\n".join(problems)})
    return out


def _chain(node: ast.Node) -> tuple[str, list[ast.Node]] | None:
    """`object.spec.x` as ("object", [select spec, select x]), or None."""
    selects: list[ast.Node] = []
    while node.kind == "select" and node.target is not None:
        selects.append(node)
        node = node.target
    if node.kind == "ident" and node.name in ("object", "oldObject") and selects:
        return node.name, selects[::-1]
    return None


def _walk(node: ast.Node | None) -> list[ast.Node]:
    if node is None:
        return []
    found = [node]
    for child in [node.target, *node.children, node.iter_range, node.accu_init,
                  node.loop_condition, node.loop_step, node.result]:  # fmt: skip
        found += _walk(child)
    return found


def _undefined(root: ast.Node, types: Mapping[str, Type], own: str) -> list[tuple[ast.Node, str]]:
    found: list[tuple[ast.Node, str]] = []
    seen: set[int] = set()
    for node in _walk(root):
        chain = _chain(node) if node.kind == "select" else None
        if chain is None or id(node) in seen:
            continue
        for select in chain[1]:
            seen.add(id(select))
        current: str | None = own
        for select in chain[1]:
            if current is None:
                break
            if current.startswith("map["):
                current = current[4:-1]
                continue
            t = types.get(current)
            if t is None:
                break
            if select.name not in t.fields:
                found.append((select, select.name))
                break
            expr = t.fields[select.name][0]
            current = None if expr in _FREE or expr.startswith("[]") else expr
    return found
