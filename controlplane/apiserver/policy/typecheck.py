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

from controlplane.api import crd, kinds
from controlplane.api.cel import ast, escaping
from controlplane.api.cel.variables import VARIABLES
from controlplane.api.kinds import registry
from machinery.apierrors import ApiError

log = logging.getLogger(__name__)
Object = dict[str, Any]
MAX_TYPES = 10  # Kubernetes' maxTypesToCheck
Root = str | Object  # a built-in schema type's name, or a CRD version's structural schema
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
    """What Kubernetes type-checks: each validation's expression and messageExpression."""
    found: list[tuple[str, str]] = []
    for i, v in enumerate(spec.get("validations") or []):
        found.append((f"spec.validations[{i}].expression", str(v.get("expression") or "")))
        if v.get("messageExpression"):
            found.append((f"spec.validations[{i}].messageExpression", str(v["messageExpression"])))
    return found


def _builtin(group: str, version: str, kind: kinds.KindInfo) -> str | None:
    own = registry.kind_types()
    return own.get((group, version, kind.kind)) or own.get((kind.group, kind.version, kind.kind))


def _custom(
    group: str, version: str, plural: str = "", kind: str = ""
) -> tuple[str, Object] | None:
    """(Kind, structural schema) of a served CRD version by resource or kind."""
    for v in crd.served_versions():
        if v.group != group or v.version != version:
            continue
        if kind and v.kind == kind:
            return v.kind, v.schema
        if plural:
            try:
                if kinds.lookup(v.key).plural == plural:
                    return v.kind, v.schema
            except LookupError:
                continue
    return None


def _kinds(spec: Object) -> list[tuple[str, Root]]:
    """("group/version, Kind=K", schema) of every kind the resourceRules name
    exactly (Kubernetes' typesToCheck: a rule with a wildcard group or version
    is skipped, wildcard and subresource resources are), sorted, at most 10."""
    found: dict[tuple[str, str, str], Root] = {}
    for rule in (spec.get("matchConstraints") or {}).get("resourceRules") or []:
        groups = [str(g) for g in rule.get("apiGroups") or []]
        versions = [str(v) for v in rule.get("apiVersions") or []]
        if any("*" in g for g in groups) or any("*" in v for v in versions):
            continue
        resources = [str(r) for r in rule.get("resources") or [] if "*" not in r and "/" not in r]
        for group in groups:
            for version in versions:
                for resource in resources:
                    custom = _custom(group, version, plural=resource)
                    if custom is not None:
                        found[(group, version, custom[0])] = custom[1]
                        continue
                    for info in kinds.all_kinds():
                        if info.plural == resource and info.group == group:
                            own = _builtin(group, version, info)
                            if own is not None:
                                found[(group, version, info.kind)] = own
    ordered = sorted(found)[:MAX_TYPES]
    return [(f"{g}/{v}, Kind={k}", found[(g, v, k)]) for g, v, k in ordered]


def _params(spec: Object) -> Root | None:
    """The schema of the policy's paramKind (None: no paramKind, or not served)."""
    param = spec.get("paramKind") or {}
    group, _, version = str(param.get("apiVersion") or "").rpartition("/")
    kind = str(param.get("kind") or "")
    if not version or not kind:
        return None
    custom = _custom(group, version, kind=kind)
    if custom is not None:
        return custom[1]
    return registry.kind_types().get((group, version, kind))


def warnings(policy: Object) -> list[Object]:
    """status.typeChecking.expressionWarnings of a policy, in Kubernetes'
    words: per expression, a block per matched kind (`apps/v1, Kind=Deployment:
    ERROR: <input>:1:12: undefined field 'replicass'`, the source line and a
    caret line, one ERROR per field, a newline after each block)."""
    spec = policy.get("spec") or {}
    targets = _kinds(spec)
    if not targets:
        return []
    from controlplane.api.cel.engine import CompileError  # the engine, at the first policy
    from controlplane.api.cel.programs import program

    params = _params(spec)
    out: list[Object] = []
    for field_ref, expression in _expressions(spec):
        try:
            root, positions = ast.parse_checked(program(expression, VARIABLES).ast())
        except (CompileError, ValueError):
            continue
        blocks: list[str] = []
        for gvk, own in targets:
            roots: dict[str, Root | None] = {"object": own, "oldObject": own, "params": params}
            errors = []
            for node, name in _undefined(root, roots):
                at = positions.get(node.id, 0)
                errors.append(f"ERROR: <input>:1:{at + 1}: undefined field '{name}'\n"
                              f" | {expression}\n | {'.' * at}^")  # fmt: skip
            if errors:
                blocks.append(f"{gvk}: " + "\n".join(errors) + "\n")
        if blocks:
            out.append({"fieldRef": field_ref, "warning": "\n".join(blocks)})
    return out


def _chain(node: ast.Node) -> tuple[str, list[ast.Node]] | None:
    """`object.spec.x` as ("object", [select spec, select x]), or None."""
    selects: list[ast.Node] = []
    while node.kind == "select" and node.target is not None:
        selects.append(node)
        node = node.target
    if node.kind == "ident" and node.name in ("object", "oldObject", "params") and selects:
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


def _step(current: Root, name: str, top: bool) -> tuple[bool, Root | None]:
    """(whether `name` is a field of `current`, the type after it; None: not judged)."""
    if isinstance(current, dict):
        return _step_schema(current, name, top)
    if current.startswith("map["):
        return True, current[4:-1]
    t = registry.schema_types().get(current)
    if t is None:
        return True, None
    if name not in t.fields:
        return False, None
    expr = t.fields[name][0]
    return True, (None if expr in _FREE or expr.startswith("[]") else expr)


def _step_schema(schema: Object, name: str, top: bool) -> tuple[bool, Root | None]:
    """A field of a CRD's structural schema (names escaped as CEL sees them);
    at the top, apiVersion, kind and metadata (ObjectMeta) are always there."""
    props = schema.get("properties")
    if top and name in ("apiVersion", "kind", "metadata") and name not in (props or {}):
        return True, ("ObjectMeta" if name == "metadata" else None)
    if isinstance(props, dict) and props:
        escaped = {escaping.escape(k): v for k, v in props.items()}
        if name in escaped:
            sub = escaped[name]
            if top and name == "metadata":
                return True, "ObjectMeta"
            return True, (sub if isinstance(sub, dict) and sub.get("type") == "object" else None)
        free = schema.get("additionalProperties") not in (None, False) or schema.get(
            "x-kubernetes-preserve-unknown-fields")  # fmt: skip
        return bool(free), None
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):  # a map: a select reads a key
        return True, (extra if extra.get("type") == "object" else None)
    return True, None


def _undefined(root: ast.Node, roots: Mapping[str, Root | None]) -> list[tuple[ast.Node, str]]:
    found: list[tuple[ast.Node, str]] = []
    seen: set[int] = set()
    for node in _walk(root):
        chain = _chain(node) if node.kind == "select" else None
        if chain is None or id(node) in seen:
            continue
        for select in chain[1]:
            seen.add(id(select))
        current = roots.get(chain[0])
        for depth, select in enumerate(chain[1]):
            if current is None:
                break
            ok, current = _step(current, select.name, depth == 0)
            if not ok:
                found.append((select, select.name))
                break
    return found
