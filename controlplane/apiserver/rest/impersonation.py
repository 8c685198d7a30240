"""Impersonation: `kubectl --as=USER --as-group=G --as-uid=U`, as
kube-apiserver's impersonation filter.

A request with Impersonate-User (and optionally Impersonate-Group, several,
Impersonate-Uid and Impersonate-Extra-<key>) runs as that user once the
caller is allowed the `impersonate` verb on each part: `users` (or
`serviceaccounts` in its namespace for `system:serviceaccount:NS:NAME`),
`groups`, `uids` and `userextras/<key>` (authentication.k8s.io), each by
name. A refusal is a 403 naming what could not be impersonated; groups or a
UID without a user are refused too. The impersonated identity is in
system:authenticated; a ServiceAccount impersonated without groups gets its
service-account groups, a node user in system:nodes is that node. The audit
log records both identities (the caller as `user`, the other as
`impersonatedUser`).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import unquote

from multidict import CIMultiDictProxy

from controlplane.api.rbac import Attributes
from controlplane.apiserver.auth import AUTHENTICATED, MASTERS_GROUP, NODES_GROUP, Identity
from controlplane.apiserver.authz import Authorizer
from controlplane.client.errors import Forbidden, InternalError

USER = "Impersonate-User"
GROUP = "Impersonate-Group"
UID = "Impersonate-Uid"
EXTRA = "impersonate-extra-"
SA_PREFIX = "system:serviceaccount:"
NODE_PREFIX = "system:node:"
AUTH_GROUP = "authentication.k8s.io"


def requested(headers: CIMultiDictProxy[str]) -> bool:
    """Whether a request asks to impersonate anyone: its fixed headers looked
    up by name, the Impersonate-Extra-<key> ones (whose names vary) found in
    one pass over the names joined, not a test of each name in turn (every
    request asks this)."""
    if USER in headers or GROUP in headers or UID in headers:
        return True
    return _EXTRA_LINE in "\n" + "\n".join(headers).lower()


_EXTRA_LINE = "\n" + EXTRA  # a header name starting the extras' prefix


def _extras(headers: Mapping[str, str] | CIMultiDictProxy[str]) -> dict[str, list[str]]:
    extra: dict[str, list[str]] = {}
    for name, value in headers.items():
        if name.lower().startswith(EXTRA):
            # The key is percent-encoded in the header name (RFC 7230 tokens).
            extra.setdefault(unquote(name[len(EXTRA) :]).lower(), []).append(value)
    return extra


def _check(authorizer: Authorizer, who: Identity, a: Attributes, what: str) -> None:
    if not authorizer.allows(who, a):
        group = f' in API group "{a.group}"' if a.group or a.resource else ""
        scope = f' in the namespace "{a.namespace}"' if a.namespace else " at the cluster scope"
        raise Forbidden(
            f'{a.resource} "{a.name}" is forbidden: User "{who.user}" cannot impersonate '
            f'resource "{what}"{group}{scope}'
        )


def impersonate(authorizer: Authorizer, who: Identity,
                headers: CIMultiDictProxy[str]) -> Identity:  # fmt: skip
    """The identity the request runs as (`who` when it asks for none)."""
    if not requested(headers):
        return who
    user = headers.get(USER, "")
    groups = tuple(headers.getall(GROUP, []))
    uid = headers.get(UID, "")
    extra = _extras(headers)
    if not user:
        parts = [*(f"group {g}" for g in groups), *([f"uid {uid}"] if uid else []),
                 *(f"extra {k}" for k in extra)]  # fmt: skip
        raise InternalError(f"requested [{', '.join(parts)}] without impersonating a user")
    if user.startswith(SA_PREFIX) and user.count(":") == 3:
        ns, name = user[len(SA_PREFIX) :].split(":", 1)
        _check(authorizer, who, Attributes("impersonate", "", "serviceaccounts", "", ns, name),
               "serviceaccounts")  # fmt: skip
        if not groups:
            groups = ("system:serviceaccounts", f"system:serviceaccounts:{ns}")
    else:
        _check(authorizer, who, Attributes("impersonate", "", "users", "", "", user), "users")
    for group in groups:
        _check(authorizer, who, Attributes("impersonate", "", "groups", "", "", group), "groups")
    if uid:
        _check(authorizer, who, Attributes("impersonate", AUTH_GROUP, "uids", "", "", uid), "uids")
    for key, values in extra.items():
        for value in values:
            _check(authorizer, who,
                   Attributes("impersonate", AUTH_GROUP, "userextras", key, "", value),
                   f"userextras/{key}")  # fmt: skip
    if user != "system:anonymous" and AUTHENTICATED not in groups:
        groups = (*groups, AUTHENTICATED)
    node = None
    if user.startswith(NODE_PREFIX) and NODES_GROUP in groups:
        node = user[len(NODE_PREFIX) :]
    return Identity(user, admin=MASTERS_GROUP in groups, node=node, groups=groups, uid=uid,
                    extra=tuple((k, tuple(v)) for k, v in sorted(extra.items())))  # fmt: skip
