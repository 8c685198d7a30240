"""Admission webhooks called in Kubernetes' chain: `mutate()` after the
built-in mutating admission (each matching MutatingWebhookConfiguration
webhook in turn, its JSONPatch applied to the object the next one sees;
`reinvocationPolicy: IfNeeded` webhooks called once more when a later one
changed the object), `validate()` after the built-in validating admission
(the matching ValidatingWebhookConfiguration webhooks, in parallel).

Per webhook, as kube-apiserver's dispatchers: rules, namespaceSelector,
objectSelector and matchPolicy (matching.py), then matchConditions
(match_conditions.py); a dry run refused when the webhook has side
effects; the AdmissionReview (review.py) sent with the HTTPS client
(client.py) within `timeoutSeconds`; then

- refused: `admission webhook "<name>" denied the request: <message>`
  with the Status code (400 at least; 400 when none) and reason it gave;
- a call that failed or an answer that is no usable AdmissionReview
  (garbage, another uid, a patch from a validating webhook, a patch that
  does not apply): `failurePolicy: Fail` refuses the request (500,
  `failed calling webhook "<name>": ...`), `Ignore` goes on without it;
- warnings go to the client's `Warning` headers, auditAnnotations to the
  audit event as `<webhook name>/<key>` (admission_context).

Webhook calls block the registry's executor thread only: never the event
loop, never a store lock (the registry holds none across admission).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from controlplane.api import json_patch, jsoncodec
from controlplane.api.cel import authz
from controlplane.apiserver import admission_context
from controlplane.apiserver.admission_context import CONNECT, DELETE, Attributes
from controlplane.apiserver.celauthz import CelAuthorizer
from controlplane.apiserver.codec import kind_info
from controlplane.apiserver.webhooks import match_conditions
from controlplane.apiserver.webhooks.client import CallError, WebhookClient
from controlplane.apiserver.webhooks.configs import Hook, WebhookConfigs
from controlplane.apiserver.webhooks.matching import (
    Resource,
    exempt,
    labels_of,
    rules_match,
    selector_matches,
)
from controlplane.apiserver.webhooks.review import (
    InvalidResponse,
    Request,
    Response,
    parse,
    review,
    review_version,
)
from controlplane.client.errors import ApiError, BadRequest, InternalError
from machinery.apierrors import from_http

Object = dict[str, Any]
NamespaceLabels = Callable[[str], Mapping[str, str] | None]
DEFAULT_TIMEOUT = 10
MAX_TIMEOUT = 30
PARALLEL = 32  # threads calling validating webhooks in parallel (shared by all requests)


class _Failed(Exception):
    """A webhook that could not be used; failurePolicy decides."""


@dataclass
class _Match:
    hook: Hook
    group: str
    version: str


class WebhookAdmission:
    def __init__(
        self,
        configs: WebhookConfigs,
        client: WebhookClient,
        namespace_labels: NamespaceLabels,
    ) -> None:
        self.configs = configs
        self.client = client
        self.namespace_labels = namespace_labels
        # the matchConditions' `authorizer` variable (None: null, as before any server sets it)
        self.authorizer: CelAuthorizer | None = None
        self._pool = ThreadPoolExecutor(PARALLEL, thread_name_prefix="validating-webhooks")

    # -- the two phases ---------------------------------------------------------------

    def mutate(self, a: Attributes) -> Object | None:
        """The object as the mutating webhooks leave it (None: unchanged)."""
        if not self.configs.mutating():
            return None
        return self.mutate_request(request_of(a))

    def validate(self, a: Attributes) -> None:
        if self.configs.validating():
            self.validate_request(request_of(a))

    def mutate_request(self, req: Request) -> Object | None:
        hooks = self.configs.mutating()
        if not hooks or exempt(req.resource.group):
            return None
        matches = self._matching(hooks, req)
        if not matches:
            return None
        original = req.obj
        changed_at: list[int] = []  # per webhook: how many changes were made when it was done
        changes = 0
        for match in matches:
            if self._mutate_one(match, req):
                changes += 1
            changed_at.append(changes)
        again = [m for m, seen in zip(matches, changed_at, strict=True)
                 if m.hook.spec.get("reinvocationPolicy") == "IfNeeded" and seen < changes]  # fmt: skip
        for match in again:  # once more: a later webhook changed what they saw
            self._mutate_one(match, req)
        return None if req.obj is original else req.obj

    def validate_request(self, req: Request) -> None:
        hooks = self.configs.validating()
        if not hooks or exempt(req.resource.group):
            return
        matches = self._matching(hooks, req)
        if len(matches) == 1:
            outcomes = [self._outcome(matches[0], req)]
        else:
            outcomes = list(self._pool.map(lambda m: self._outcome(m, req), matches))
        for match, outcome in zip(matches, outcomes, strict=True):
            if isinstance(outcome, Response):
                self._record(match.hook, outcome)
        for match, outcome in zip(matches, outcomes, strict=True):
            if isinstance(outcome, ApiError):
                raise outcome
            if isinstance(outcome, _Failed) and _fails_closed(match.hook):
                raise _call_failed(match.hook, outcome)
            if isinstance(outcome, Response) and not outcome.allowed:
                raise _denied(match.hook, outcome)

    # -- one webhook ------------------------------------------------------------------

    def _mutate_one(self, match: _Match, req: Request) -> bool:
        """Call one mutating webhook; True when it changed req.obj."""
        outcome = self._outcome(match, req)
        if isinstance(outcome, ApiError):
            raise outcome
        if isinstance(outcome, _Failed):
            if _fails_closed(match.hook):
                raise _call_failed(match.hook, outcome)
            return False
        self._record(match.hook, outcome)
        if not outcome.allowed:
            raise _denied(match.hook, outcome)
        if not outcome.patch or req.obj is None:
            return False
        try:
            patched = _apply(req.obj, outcome.patch)
        except _Failed as err:
            if _fails_closed(match.hook):
                raise _call_failed(match.hook, err) from err
            return False
        if patched == req.obj:
            return False
        req.obj = patched
        return True

    def _outcome(self, match: _Match, req: Request) -> Response | _Failed | ApiError:
        """The webhook's answer, why it could not be had, or an error that
        refuses the request whatever the failurePolicy (a dry run refused)."""
        spec = match.hook.spec
        if req.dry_run and spec.get("sideEffects") not in ("None", "NoneOnDryRun"):
            return BadRequest(f'admission webhook "{match.hook.name}" does not support dry run')
        timeout = min(int(spec.get("timeoutSeconds") or DEFAULT_TIMEOUT), MAX_TIMEOUT)
        version = review_version(spec.get("admissionReviewVersions"))
        uid, body = review(req, version, match.group, match.version)
        try:
            data = self.client.post(spec.get("clientConfig") or {}, jsoncodec.dumps(body),
                                    timeout)  # fmt: skip
        except CallError as err:
            return _Failed(f"failed to call webhook: {err}")
        try:
            return parse(data, uid, version, match.hook.mutating)
        except InvalidResponse as err:
            return _Failed(f"received invalid webhook response: {err}")

    def _matching(self, hooks: tuple[Hook, ...], req: Request) -> list[_Match]:
        found: list[_Match] = []
        r = req.resource
        for hook in hooks:
            gv = rules_match(hook.spec, req.operation, r)
            if gv is None:
                continue
            if not self._namespace_matches(hook, req):
                continue
            if not selector_matches(hook.spec.get("objectSelector"),
                                    (labels_of(req.obj), labels_of(req.old))):  # fmt: skip
                continue
            conditions = hook.spec.get("matchConditions") or []
            if conditions:
                try:
                    if not self._conditions(conditions, req):
                        continue
                except match_conditions.ConditionError as err:
                    if _fails_closed(hook):
                        raise _call_failed(hook, _Failed(str(err))) from err
                    continue
            found.append(_Match(hook, *gv))
        return found

    def _conditions(self, conditions: list[Object], req: Request) -> bool:
        variables = _variables(req)
        if self.authorizer is None:
            return match_conditions.evaluate(conditions, variables)
        r = req.resource
        own = {"group": r.group, "resource": r.resource, "subresource": r.subresource,
               "namespace": r.namespace, "name": req.name}  # fmt: skip
        variables["authorizer"] = self.authorizer.variable(req.identity, own)
        with authz.checking(self.authorizer.check):
            return match_conditions.evaluate(conditions, variables)

    def _namespace_matches(self, hook: Hook, req: Request) -> bool:
        selector = hook.spec.get("namespaceSelector")
        r = req.resource
        if r.resource == "namespaces" and not r.subresource:
            own = req.old if req.operation == "DELETE" else req.obj
            return selector_matches(selector, (labels_of(own) or {},))
        if not r.namespace:
            return True  # cluster-scoped: never exempted by a namespace selector
        if not selector:
            return True
        return selector_matches(selector, (self.namespace_labels(r.namespace) or {},))

    @staticmethod
    def _record(hook: Hook, response: Response) -> None:
        for text in response.warnings:
            admission_context.warn(text)
        for key, value in response.audit_annotations.items():
            admission_context.annotate(f"{hook.name}/{key}", value)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def request_of(a: Attributes) -> Request:
    """The webhooks' view of a registry write (a DELETE has no new object)."""
    info = kind_info(a.kind)
    namespace = a.namespace if info.namespaced else ""
    resource = Resource(info.group, info.version, info.plural, a.subresource, namespace,
                        info.namespaced, info.also_api_versions)  # fmt: skip
    obj = None if a.operation == DELETE else a.obj
    kind = str(a.obj.get("kind") or info.kind) if a.operation == CONNECT else info.kind
    return Request(a.operation, kind, resource, a.name, a.identity, obj, a.old,
                   a.dry_run, a.options)  # fmt: skip


def _variables(req: Request) -> Object:
    _, body = review(req, "v1", req.resource.group, req.resource.version)
    request = body["request"]
    return {"object": req.obj, "oldObject": req.old, "request": request}


def _fails_closed(hook: Hook) -> bool:
    return bool(hook.spec.get("failurePolicy", "Fail") != "Ignore")


def _call_failed(hook: Hook, err: Exception) -> ApiError:
    return InternalError(f'Internal error occurred: failed calling webhook "{hook.name}": {err}')


def _denied(hook: Hook, response: Response) -> ApiError:
    """Kubernetes' webhookerrors.ToStatusErr."""
    status = response.status
    denied = f'admission webhook "{hook.name}" denied the request'
    message, reason = str(status.get("message") or ""), str(status.get("reason") or "")
    if message:
        text = f"{denied}: {message}"
    elif reason:
        text = f"{denied}: {reason}"
    else:
        text = f"{denied} without explanation"
    code = status.get("code")
    code = code if isinstance(code, int) and code >= 400 else 400
    return from_http(code, reason, text)


def _apply(obj: Object, ops: list[Any]) -> Object:
    try:
        patched = json_patch.apply(obj, ops)
    except ApiError as err:
        raise _Failed(f"the patch could not be applied: {err}") from err
    if not isinstance(patched, dict):
        raise _Failed("the patch did not leave an object")
    for key in ("apiVersion", "kind"):
        if patched.get(key) != obj.get(key):
            raise _Failed(f"the patch may not change {key}")
    old_meta, new_meta = obj.get("metadata") or {}, patched.get("metadata")
    if not isinstance(new_meta, dict):
        raise _Failed("the patch did not leave metadata an object")
    for key in ("name", "namespace", "uid"):
        if new_meta.get(key) != old_meta.get(key):
            raise _Failed(f"the patch may not change metadata.{key}")
    return patched
