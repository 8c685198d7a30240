"""The ValidatingAdmissionPolicy admission plugin, in Kubernetes' chain after
the built-in validating admission (it is the last of Registry.validating,
as ValidatingAdmissionPolicy precedes ValidatingAdmissionWebhook there).

For every binding whose policy matches the request (matching.py: the
policy's matchConstraints, then the binding's matchResources): its params
(paramRef by name or selector, parameterNotFoundAction), the policy's
matchConditions, its variables, then each validation; a false one fails
with its message (messageExpression first, then message, else `failed
expression: <expression>`), an error follows failurePolicy. A failure
does what the binding's validationActions say: Deny refuses the request
(`ValidatingAdmissionPolicy 'p' with binding 'b' denied request: ...`,
status by the validation's reason, Forbidden by default), Warn adds a
Warning header, Audit an audit annotation. auditAnnotations are recorded
as `<policy>/<key>`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from controlplane.api import kinds
from controlplane.api.cel import authz
from controlplane.api.cel.variables import VARIABLES
from controlplane.api.selectors import SelectorError, from_structured
from controlplane.apiserver import admission_context
from controlplane.apiserver.admission_context import Attributes
from controlplane.apiserver.celauthz import CelAuthorizer
from controlplane.apiserver.policy.cache import PolicyCache
from controlplane.apiserver.policy.matching import Request, rules_match
from controlplane.apiserver.webhooks.matching import labels_of, selector_matches
from machinery.apierrors import ApiError, Forbidden, Invalid, RequestEntityTooLarge, Unauthenticated

Object = dict[str, Any]
Lookup = Callable[[str, str, str], Object | None]
Objects = Callable[[str, str], list[Object]]
Namespace = Callable[[str], Object | None]
AUDIT_KEY = "validation.policy.admission.k8s.io/validation_failure"
_ERRORS: dict[str, type[ApiError]] = {
    "Invalid": Invalid,
    "Unauthorized": Unauthenticated,
    "RequestEntityTooLarge": RequestEntityTooLarge,
}


class _Failure(Exception):
    def __init__(self, message: str, reason: str = "Forbidden") -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason


class PolicyAdmission:
    def __init__(self, cache: PolicyCache, lookup: Lookup, objects: Objects,
                 namespace: Namespace, authorizer: CelAuthorizer | None = None) -> None:  # fmt: skip
        self.cache = cache
        self.authorizer = authorizer  # the `authorizer` variable's checks (None: every check errs)
        self.lookup = lookup
        self.objects = objects
        self.namespace = namespace  # a Namespace as last read (shared, never changed)

    def __call__(self, a: Attributes) -> None:
        if self.cache.empty():
            return
        try:
            info = kinds.by_kind(a.kind)
        except LookupError:
            return
        if info.group == "admissionregistration.k8s.io":
            return  # policies never judge policies (Kubernetes exempts them)
        req = Request(a.operation, info.group, info.version, info.plural, a.subresource,
                      a.namespace, a.name, info.namespaced, info.also_api_versions)  # fmt: skip
        audit: list[Object] = []
        base: Object | None = None
        for binding, policy in self.cache.pairs():
            if not self._matches(policy, binding, req, a):
                continue
            if base is None:
                base = self._variables(a, info)
            if self.authorizer is None:
                self._apply(policy, binding, base, a, audit)
                continue
            with authz.checking(self.authorizer.check):
                self._apply(policy, binding, base, a, audit)
        if audit:
            admission_context.annotate(AUDIT_KEY, json.dumps(audit, separators=(",", ":")))

    # -- matching ---------------------------------------------------------------------

    def _matches(self, policy: Object, binding: Object, req: Request, a: Attributes) -> bool:
        constraints = (policy.get("spec") or {}).get("matchConstraints") or {}
        if not rules_match(constraints, req) or not self._selected(constraints, a):
            return False
        resources = (binding.get("spec") or {}).get("matchResources")
        if isinstance(resources, dict):
            return rules_match(resources, req, empty_matches=True) and self._selected(resources, a)
        return True

    def _selected(self, match: Object, a: Attributes) -> bool:
        if not selector_matches(match.get("objectSelector"), (labels_of(a.obj), labels_of(a.old))):
            return False
        selector = match.get("namespaceSelector")
        if not selector or not a.namespace:
            return True
        if a.kind == "Namespace":
            return selector_matches(selector, (labels_of(a.obj),))
        ns = self.namespace(a.namespace)
        return selector_matches(selector, (labels_of(ns) or {},))

    # -- evaluation -------------------------------------------------------------------

    def _variables(self, a: Attributes, info: kinds.KindInfo) -> Object:
        gvk = {"group": info.group, "version": info.version, "kind": info.kind}
        gvr = {"group": info.group, "version": info.version, "resource": info.plural}
        who = a.identity
        request = {
            "kind": gvk, "resource": gvr, "subResource": a.subresource,
            "requestKind": gvk, "requestResource": gvr, "requestSubResource": a.subresource,
            "name": a.name, "namespace": a.namespace, "operation": a.operation,
            "userInfo": {"username": who.user, "uid": who.uid, "groups": list(who.groups)},
            "dryRun": bool(getattr(a, "dry_run", False)), "options": getattr(a, "options", None),
        }  # fmt: skip
        deleting = a.operation == "DELETE"
        ns = self.namespace(a.namespace) if a.namespace else None
        own = {"group": info.group, "resource": info.plural, "subresource": a.subresource,
               "namespace": a.namespace, "name": a.name}  # fmt: skip
        # always there, as in Kubernetes; without an authorizer every check() errs
        authorizer = authz.authorizer(authz.user_value(who.user, who.groups, who.uid), own)
        return {
            "object": None if deleting else a.obj,
            "oldObject": a.obj if deleting else a.old,
            "request": request,
            "namespaceObject": ns,
            "authorizer": authorizer,
            "params": None,
            "variables": {},
        }

    def _apply(self, policy: Object, binding: Object, base: Object, a: Attributes,
               audit: list[Object]) -> None:  # fmt: skip
        spec, bspec = policy.get("spec") or {}, binding.get("spec") or {}
        pname, bname = policy["metadata"]["name"], binding["metadata"]["name"]
        actions = [str(x) for x in bspec.get("validationActions") or []]
        fail_closed = spec.get("failurePolicy", "Fail") != "Ignore"
        prefix = f"ValidatingAdmissionPolicy '{pname}' with binding '{bname}'"
        try:
            params = self._params(spec, bspec, a)
        except _Failure as problem:
            if fail_closed:
                self._act(["Deny"], prefix, problem, audit, pname, bname, -1)
            return
        for param in params:
            activation = dict(base, params=param)
            try:
                if not self._conditions(spec, activation):
                    continue
                activation["variables"] = self._composite(spec, activation)
            except _Failure as err:
                if fail_closed:
                    self._act(["Deny"], prefix, err, audit, pname, bname, -1)
                continue
            for index, failure in self._validations(spec, activation, fail_closed):
                self._act(actions, prefix, failure, audit, pname, bname, index)
            self._audit_annotations(spec, activation, pname)

    def _params(self, spec: Object, bspec: Object, a: Attributes) -> list[Object | None]:
        kind = spec.get("paramKind")
        if not kind:
            return [None]
        ref = bspec.get("paramRef")
        if not isinstance(ref, dict):
            raise _Failure("failed to configure binding: paramRef is required when the policy "
                           "has a paramKind", "Invalid")  # fmt: skip
        info = _param_kind(str(kind.get("apiVersion") or ""), str(kind.get("kind") or ""))
        if info is None:
            raise _Failure(f"failed to configure binding: paramKind {kind.get('kind')} "
                           "is not served", "Invalid")  # fmt: skip
        namespace = str(ref.get("namespace") or (a.namespace if info.namespaced else ""))
        if ref.get("name"):
            found = self.lookup(info.key, namespace, str(ref["name"]))
            params = [found] if found is not None else []
        else:
            try:
                selector = from_structured(ref.get("selector") or {})
            except SelectorError as err:
                raise _Failure(f"failed to configure binding: {err}", "Invalid") from err
            params = [o for o in self.objects(info.key, namespace)
                      if selector.matches(labels_of(o) or {})]  # fmt: skip
        if params:
            return list(params)
        if ref.get("parameterNotFoundAction") == "Allow":
            return []
        raise _Failure("failed to configure binding: no params found for policy binding with "
                       "`Deny` parameterNotFoundAction")  # fmt: skip

    @staticmethod
    def _eval(expression: str, activation: Any) -> Any:
        from controlplane.api.cel.engine import CompileError, EvalError  # loaded at first use
        from controlplane.api.cel.programs import program

        try:
            return program(expression, VARIABLES).evaluate(activation)
        except (CompileError, EvalError) as err:
            raise _Failure(
                f"expression '{expression}' resulted in error: {err}", "Invalid"
            ) from err

    def _conditions(self, spec: Object, activation: Object) -> bool:
        error: _Failure | None = None
        for condition in spec.get("matchConditions") or []:
            try:
                if self._eval(str(condition.get("expression")), activation) is False:
                    return False
            except _Failure as failure:
                error = error or failure
        if error is not None:
            raise error
        return True

    def _composite(self, spec: Object, activation: Object) -> Object:
        values: Object = {}
        for variable in spec.get("variables") or []:
            name = str(variable.get("name"))
            values[name] = self._eval(str(variable.get("expression")),
                                      dict(activation, variables=values))  # fmt: skip
        return values

    def _validations(self, spec: Object, activation: Object,
                     fail_closed: bool) -> list[tuple[int, _Failure]]:  # fmt: skip
        from controlplane.api.cel.engine import Bound

        failures: list[tuple[int, _Failure]] = []
        bound = Bound(VARIABLES, activation)  # the object converted once for all of them
        for index, v in enumerate(spec.get("validations") or []):
            expression = str(v.get("expression"))
            try:
                result = self._eval(expression, bound)
            except _Failure as failure:
                if fail_closed:
                    failures.append((index, failure))
                continue
            if result is True:
                continue
            if result is not False:
                if fail_closed:
                    failures.append((index, _Failure(
                        f"expression '{expression}' resulted in error: must evaluate to bool",
                        "Invalid")))  # fmt: skip
                continue
            failures.append((index, _Failure(self._message(v, activation),
                                             str(v.get("reason") or "Forbidden"))))  # fmt: skip
        return failures

    def _message(self, v: Object, activation: Object) -> str:
        if v.get("messageExpression"):
            try:
                text = self._eval(str(v["messageExpression"]), activation)
            except _Failure:
                text = None
            if isinstance(text, str) and text.strip() and "\n" not in text:
                return text
        if v.get("message"):
            return str(v["message"])
        return f"failed expression: {v.get('expression')}"

    def _audit_annotations(self, spec: Object, activation: Object, pname: str) -> None:
        for annotation in spec.get("auditAnnotations") or []:
            try:
                value = self._eval(str(annotation.get("valueExpression")), activation)
            except _Failure:
                continue
            if isinstance(value, str) and value:
                admission_context.annotate(f"{pname}/{annotation.get('key')}", value)

    @staticmethod
    def _act(actions: list[str], prefix: str, failure: _Failure, audit: list[Object],
             pname: str, bname: str, index: int) -> None:  # fmt: skip
        if "Audit" in actions:
            audit.append({"message": failure.message, "policy": pname, "binding": bname,
                          "expressionIndex": index, "validationActions": actions})  # fmt: skip
        if "Warn" in actions:
            admission_context.warn(f"Validation failed for {prefix}: {failure.message}")
        if "Deny" in actions:
            error = _ERRORS.get(failure.reason, Forbidden)
            raise error(f"{prefix} denied request: {failure.message}")


def _param_kind(api_version: str, kind: str) -> kinds.KindInfo | None:
    group = api_version.rpartition("/")[0]
    for key in (kind, f"{kind}.{group}"):
        try:
            info = kinds.by_kind(key)
        except LookupError:
            continue
        if info.group == group:
            return info
    return None
