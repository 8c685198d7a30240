"""Kubernetes' CEL authorizer library (k8s.io/apiserver/pkg/cel/library
authz.go) on cel-cpp: the `authorizer` variable of ValidatingAdmissionPolicy
and of admission webhooks' matchConditions.

    authorizer.group('apps').resource('deployments').subresource('scale')
        .namespace('ns').name('web').check('update').allowed()
    authorizer.path('/healthz').check('get').reason()
    authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('list')
    authorizer.requestResource.check('delete').errored()

Values are one-key-tagged maps (cel-cpp's Python bindings carry no opaque
values): an Authorizer `{"@authorizer": user}`, a PathCheck adds `@path`, a
GroupCheck `@group`, a ResourceCheck `@resource` (and `@subresource`,
`@namespace`, `@name`, `@fieldSelector`, `@labelSelector`), a Decision is
`{"@decision": {allowed, reason, error}}`. `check` asks the server's
authorizer through the `Checker` bound (`checking()`) around an evaluation:
this module knows no server; without one bound a check is an errored
Decision.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from controlplane.api.rbac import Attributes

Object = dict[str, Any]
USER, DECISION = "@authorizer", "@decision"
_PATH, _GROUP, _RESOURCE = "@path", "@group", "@resource"
_SUB, _NS, _NAME = "@subresource", "@namespace", "@name"
_FIELDS, _LABELS = "@fieldSelector", "@labelSelector"
SA_PREFIX = "system:serviceaccount:"
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)


@dataclass(frozen=True)
class Check:
    """One authorization question (Kubernetes' AttributesRecord): who asks,
    and `request`, a resource request (`resource` set, apiVersion `*`) or a
    non-resource `path`, with the request's field and label selectors."""

    user: str
    groups: tuple[str, ...]
    uid: str
    request: Attributes
    field_selector: str = ""
    label_selector: str = ""


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""
    error: str = ""


Checker = Callable[[Check], Decision]
_CHECKER: ContextVar[Checker | None] = ContextVar("cel_authorizer", default=None)


@contextmanager
def checking(checker: Checker) -> Iterator[None]:
    """Evaluations within answer `check` with `checker`."""
    token = _CHECKER.set(checker)
    try:
        yield
    finally:
        _CHECKER.reset(token)


def user_value(user: str, groups: tuple[str, ...] | list[str], uid: str = "") -> Object:
    return {"username": user, "groups": list(groups), "uid": uid}


def authorizer(user: Object, request_resource: Mapping[str, str] | None = None) -> Object:
    """The `authorizer` variable for `user` (user_value); with the request's
    group, resource, subresource, namespace and name, `authorizer.requestResource`."""
    value: Object = {USER: user}
    if request_resource is not None:
        value["requestResource"] = {
            USER: user, _GROUP: request_resource.get("group", ""),
            _RESOURCE: request_resource.get("resource", ""),
            _SUB: request_resource.get("subresource", ""),
            _NS: request_resource.get("namespace", ""), _NAME: request_resource.get("name", ""),
        }  # fmt: skip
    return value


def _kind(value: Any, tag: str, want: str) -> Object:
    if not isinstance(value, dict) or USER not in value:
        raise ValueError(f"no such overload: {want}")
    has = (_RESOURCE if _RESOURCE in value else _PATH if _PATH in value
           else _GROUP if _GROUP in value else USER)  # fmt: skip
    if has != tag:
        raise ValueError(f"no such overload: {want}")
    return value


def _path(a: Any, path: str) -> Object:
    a = _kind(a, USER, "path")
    if not path.strip():
        raise ValueError("path must not be empty")
    return {USER: a[USER], _PATH: path}


def _group(a: Any, group: str) -> Object:
    return {USER: _kind(a, USER, "group")[USER], _GROUP: group}


def _service_account(a: Any, namespace: str, name: str) -> Object:
    _kind(a, USER, "serviceAccount")
    if len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        raise ValueError("Invalid service account name")
    if len(namespace) > 63 or not _DNS1123_LABEL.match(namespace):
        raise ValueError("Invalid service account namespace")
    groups = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
    return {USER: user_value(f"{SA_PREFIX}{namespace}:{name}", groups)}


def _resource(g: Any, resource: str) -> Object:
    g = _kind(g, _GROUP, "resource")
    if not resource.strip():
        raise ValueError("resource must not be empty")
    return {USER: g[USER], _GROUP: g[_GROUP], _RESOURCE: resource, _SUB: "", _NS: "", _NAME: ""}


def _setter(key: str, fn: str) -> Callable[[Any, str], Object]:
    def set_(r: Any, value: str) -> Object:
        return {**_kind(r, _RESOURCE, fn), key: value}

    return set_


def _check(c: Any, verb: str) -> Object:
    if not isinstance(c, dict) or (_PATH not in c and _RESOURCE not in c):
        raise ValueError("no such overload: check")
    user = c[USER] if isinstance(c.get(USER), dict) else {}
    who = (str(user.get("username") or ""), tuple(str(g) for g in user.get("groups") or ()),
           str(user.get("uid") or ""))  # fmt: skip
    if _PATH in c:
        question = Check(*who, Attributes(verb, path=str(c[_PATH])))
    else:
        request = Attributes(verb, str(c.get(_GROUP, "")), str(c[_RESOURCE]),
                             str(c.get(_SUB, "")), str(c.get(_NS, "")), str(c.get(_NAME, "")))  # fmt: skip
        question = Check(*who, request, str(c.get(_FIELDS, "")), str(c.get(_LABELS, "")))
    checker = _CHECKER.get()
    if checker is None:
        d = Decision(False, error="no authorizer is available to this expression")
    else:
        try:
            d = checker(question)
        except Exception as err:  # an authorizer failure is the Decision's error
            d = Decision(False, error=str(err) or type(err).__name__)
    return {DECISION: {"allowed": d.allowed, "reason": d.reason, "error": d.error}}


def _decision(field: str) -> Callable[[Any], Any]:
    def get(d: Any) -> Any:
        if not isinstance(d, dict) or not isinstance(d.get(DECISION), dict):
            raise ValueError(f"no such overload: {field}")
        inner = d[DECISION]
        if field == "errored":
            return bool(inner.get("error"))
        return inner.get(field, False if field == "allowed" else "")

    return get


def decls(opaque: Any) -> dict[str, list[Any]]:
    """name -> overloads, for library.extension() (cel-cpp loaded only then:
    the values and `checking` cost no engine)."""
    from cel_expr_python import cel

    T = cel.Type
    S, B = T.STRING, T.BOOL

    def member(oid: str, ret: Any, params: list[Any], impl: Callable[..., Any]) -> Any:
        return cel.Overload(f"k8s_authz_{oid}", ret, [opaque, *params], is_member=True, impl=impl)

    return {
        "path": [member("authorizer_path", opaque, [S], _path)],
        "group": [member("authorizer_group", opaque, [S], _group)],
        "serviceAccount": [member("authorizer_serviceaccount", opaque, [S, S], _service_account)],
        "resource": [member("groupcheck_resource", opaque, [S], _resource)],
        "subresource": [member("resourcecheck_subresource", opaque, [S],
                               _setter(_SUB, "subresource"))],
        "namespace": [member("resourcecheck_namespace", opaque, [S], _setter(_NS, "namespace"))],
        "name": [member("resourcecheck_name", opaque, [S], _setter(_NAME, "name"))],
        "fieldSelector": [member("authorizer_fieldselector", opaque, [S],
                                 _setter(_FIELDS, "fieldSelector"))],
        "labelSelector": [member("authorizer_labelselector", opaque, [S],
                                 _setter(_LABELS, "labelSelector"))],
        "check": [member("check", opaque, [S], _check)],
        "allowed": [member("decision_allowed", B, [], _decision("allowed"))],
        "reason": [member("decision_reason", S, [], _decision("reason"))],
        "errored": [member("decision_errored", B, [], _decision("errored"))],
        "error": [member("decision_error", S, [], _decision("error"))],
    }  # fmt: skip


def is_value(value: Any) -> bool:
    """Whether a result is one of this library's values (not JSON to show)."""
    return isinstance(value, dict) and (USER in value or DECISION in value)
