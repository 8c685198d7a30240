"""The create-only kinds: access reviews, token reviews and token requests.

SelfSubjectAccessReview ("may I?", what `kubectl auth can-i` asks),
SelfSubjectRulesReview ("what may I?", `kubectl auth can-i --list`),
SubjectAccessReview ("may they?"), LocalSubjectAccessReview (the same in
one namespace), TokenReview ("who is this token?") and
TokenRequest (serviceaccounts/token: a bound, expiring ServiceAccount
token), answered at once and never stored, as Kubernetes does. Who may create
which is RBAC's decision (system:basic-user grants the first to everyone,
system:auth-delegator the other two); the registry authorizes the create
and hands the object here to fill in its status.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from controlplane.api.rbac import Attributes
from controlplane.apiserver.auth import AUTHENTICATED, MASTERS_GROUP, Identity
from controlplane.apiserver.authz import Authorizer
from controlplane.apiserver.satokens import (
    API_AUDIENCES,
    Lookup,
    ServiceAccountTokens,
    expiration,
)
from controlplane.client.errors import Invalid, NotFound, Unavailable
from machinery.rfc3339 import format_time

Object = dict[str, Any]


def _attributes(spec: Any) -> Attributes:
    if not isinstance(spec, dict):
        raise Invalid("spec: required")
    resource = spec.get("resourceAttributes")
    non_resource = spec.get("nonResourceAttributes")
    if isinstance(resource, dict) and not non_resource:
        verb = str(resource.get("verb") or "")
        if not verb:
            raise Invalid("spec.resourceAttributes.verb: required")
        return Attributes(
            verb,
            str(resource.get("group") or ""),
            str(resource.get("resource") or ""),
            str(resource.get("subresource") or ""),
            str(resource.get("namespace") or ""),
            str(resource.get("name") or ""),
        )
    if isinstance(non_resource, dict) and not resource:
        path, verb = str(non_resource.get("path") or ""), str(non_resource.get("verb") or "")
        if not path or not verb:
            raise Invalid("spec.nonResourceAttributes: path and verb are required")
        return Attributes(verb, path=path)
    raise Invalid("spec: exactly one of resourceAttributes and nonResourceAttributes")


@dataclass(eq=False)
class Reviews:
    """Fills in the status of a review; see the module docstring."""

    authorizer: Authorizer
    authenticate: Callable[[str], Identity | None]
    tokens: ServiceAccountTokens | None = None
    lookup: Lookup | None = None
    handlers: dict[str, Callable[[Object, Identity], Object]] = field(init=False)

    def __post_init__(self) -> None:
        self.handlers = {
            "SelfSubjectAccessReview": self.self_subject_access_review,
            "SubjectAccessReview": self.subject_access_review,
            "LocalSubjectAccessReview": self.local_subject_access_review,
            "SelfSubjectRulesReview": self.self_subject_rules_review,
            "TokenReview": self.token_review,
            "TokenRequest": self.token_request,
        }

    def _access(self, obj: Object, who: Identity) -> Object:
        attrs = _attributes(obj.get("spec"))
        allowed = self.authorizer.allows(who, attrs)
        # As RBAC answers: a reason when allowed, none for no matching rule
        # (kubectl then prints a bare "no").
        obj["status"] = {"allowed": True, "reason": "allowed by RBAC"} if allowed else {
            "allowed": False}  # fmt: skip
        return obj

    def self_subject_access_review(self, obj: Object, identity: Identity) -> Object:
        return self._access(obj, identity)

    def subject_access_review(self, obj: Object, identity: Identity) -> Object:
        spec = obj.get("spec") or {}
        user = str(spec.get("user") or "")
        groups = tuple(str(g) for g in spec.get("groups") or [])
        if not user and not groups:
            raise Invalid("spec.user: required (or spec.groups)")
        who = Identity(user, admin=MASTERS_GROUP in groups, groups=groups,
                       uid=str(spec.get("uid") or ""))  # fmt: skip
        return self._access(obj, who)

    def local_subject_access_review(self, obj: Object, identity: Identity) -> Object:
        """A SubjectAccessReview within the URL's namespace: its
        resourceAttributes.namespace must be that one (empty: filled in)."""
        ns = str((obj.get("metadata") or {}).get("namespace") or "")
        spec = obj.get("spec")
        if isinstance(spec, dict):
            if spec.get("nonResourceAttributes"):
                raise Invalid("spec.nonResourceAttributes: Invalid value: "
                              f"{spec['nonResourceAttributes']}: disallowed on this kind of "
                              "request")  # fmt: skip
            attrs = spec.get("resourceAttributes")
            if isinstance(attrs, dict):
                if attrs.get("namespace") not in (None, "", ns):
                    raise Invalid(
                        f'spec.resourceAttributes.namespace: Invalid value: "{attrs["namespace"]}"'
                        f": must match metadata.namespace"
                    )
                attrs["namespace"] = ns
        return self.subject_access_review(obj, identity)

    def self_subject_rules_review(self, obj: Object, identity: Identity) -> Object:
        """The rules the caller holds in spec.namespace (cluster-wide ones
        included), as RBAC's rule resolver lists them."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        namespace = str(spec.get("namespace") or "")
        rules = self.authorizer.rules_of(identity, namespace)
        obj["status"] = {
            "resourceRules": [
                {k: v for k, v in r.to_dict().items() if k != "nonResourceURLs"}
                for r in rules
                if r.resources or not r.non_resource_urls
            ],
            "nonResourceRules": [
                {"verbs": sorted(r.verbs), "nonResourceURLs": sorted(r.non_resource_urls)}
                for r in rules
                if r.non_resource_urls
            ],
            "incomplete": False,
        }
        return obj

    def token_request(self, obj: Object, identity: Identity) -> Object:
        if self.tokens is None or self.lookup is None:
            raise Unavailable("this server issues no ServiceAccount tokens")
        meta = obj.get("metadata") or {}
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        account = self.lookup("ServiceAccount", ns, name)
        if account is None:
            raise NotFound(f'serviceaccounts "{name}" not found')
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            raise Invalid("spec: must be an object")
        audiences = spec.get("audiences") or list(API_AUDIENCES)
        if not isinstance(audiences, list) or not all(isinstance(a, str) and a for a in audiences):
            raise Invalid("spec.audiences: must be a list of non-empty strings")
        try:
            seconds = expiration(spec.get("expirationSeconds"))
        except ValueError as err:
            raise Invalid(str(err)) from err
        pod = None
        bound = spec.get("boundObjectRef")
        if bound:
            if not isinstance(bound, dict) or bound.get("kind") != "Pod":
                raise Invalid("spec.boundObjectRef.kind: only Pod is supported")
            pod = self.lookup("Pod", ns, str(bound.get("name") or ""))
            if pod is None:
                raise NotFound(f'pods "{bound.get("name")}" not found')
            uid = (pod.get("metadata") or {}).get("uid")
            if bound.get("uid") and bound["uid"] != uid:
                raise Invalid(f"spec.boundObjectRef.uid: {bound['uid']!r} is not the pod's ({uid})")
        issued = self.tokens.issue(ns, account, audiences, seconds, pod)
        spec["audiences"], spec["expirationSeconds"] = audiences, seconds
        obj["status"] = {"token": issued.token, "expirationTimestamp": format_time(issued.expires)}
        return obj

    def token_review(self, obj: Object, identity: Identity) -> Object:
        """Who a token is, for the audiences asked about (spec.audiences; the
        API server's own by default): a ServiceAccount token counts only for
        the audiences it was issued for, every other token only for the API
        server, as Kubernetes' TokenReview has it."""
        spec = obj.get("spec") or {}
        token = str(spec.get("token") or "")
        if not token:
            raise Invalid("spec.token: required")
        audiences = [str(a) for a in spec.get("audiences") or []] or list(API_AUDIENCES)
        if token.startswith("eyJ") and self.tokens is not None:
            found = self.tokens.authenticate(token, audiences)
            issued_for = (self.tokens.claims(token) or {}).get("aud") or []
            granted = [a for a in audiences if a in issued_for]
        else:
            granted = [a for a in audiences if a in API_AUDIENCES]
            found = self.authenticate(token) if granted else None
        if found is None:
            obj["status"] = {"authenticated": False, "error": "invalid bearer token"}
            return obj
        groups = list(found.groups) if AUTHENTICATED in found.groups else [
            *found.groups, AUTHENTICATED]  # fmt: skip
        obj["status"] = {
            "authenticated": True,
            "user": {"username": found.user, "uid": found.uid, "groups": groups},
            "audiences": granted,
        }
        return obj
