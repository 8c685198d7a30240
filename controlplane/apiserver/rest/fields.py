"""Field managers and field validation of a write, as Kubernetes has them.

Every write but an apply records an Update entry in metadata.managedFields
for its manager (`server_side_apply.record_update`): the `fieldManager`
query parameter, else the program name the User-Agent starts with (as
kube-apiserver derives it). `fieldValidation=Strict|Warn|Ignore` decides what
unknown or mistyped fields do: refused (400), reported in `Warning` headers,
or dropped silently. Built-in kinds are checked against the OpenAPI schema,
custom kinds against their CRD's structural schema.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from controlplane.api import crd, openapi, server_side_apply
from controlplane.apiserver.rest.context import Call
from controlplane.apiserver.rest.status import BadRequest

Object = dict[str, Any]
VALIDATION = ("Strict", "Warn", "Ignore")
MAX_MANAGER = 128  # kube-apiserver's limit on a fieldManager's length


def manager(call: Call) -> str:
    name = call.query("fieldManager")
    if not name:
        agent = call.request.headers.get("User-Agent", "")
        name = agent.split("/", 1)[0].strip() or "unknown"
    if len(name) > MAX_MANAGER:
        raise BadRequest(f"fieldManager: must not be longer than {MAX_MANAGER} characters")
    return name


def validation(call: Call) -> str:
    value = call.query("fieldValidation", "Warn")
    if value not in VALIDATION:
        raise BadRequest(
            f"fieldValidation: unsupported value {value!r}: supported values: "
            f"{', '.join(VALIDATION)}"
        )
    return value


def problems(key: str, obj: Object) -> list[str]:
    """The unknown (and, for built-ins, mistyped) fields of `obj`."""
    if crd.is_custom(key):
        return [f"unknown field {path!r}" for path in crd.unknown_fields(key, obj)]
    return openapi.validate(obj)


class Write:
    """One write's manager, validation mode and the warnings it gathered."""

    def __init__(self, call: Call) -> None:
        self.key = call.target.info.key
        self.subresource = call.target.subresource
        self.manager = manager(call)
        self.mode = validation(call)
        self.warnings: list[str] = []

    def check(self, obj: Object) -> None:
        if self.mode == "Ignore":
            return
        found = problems(self.key, obj)
        if found and self.mode == "Strict":
            raise BadRequest(f"strict decoding error: {', '.join(found)}")
        self.warnings = found

    def updated(self, old: Object | None, new: Object) -> Object:
        """`new`, checked, with managedFields recording this write."""
        self.check(new)
        return server_side_apply.record_update(
            old, new, self.manager, kind=self.key, subresource=self.subresource
        )

    def headers(self, response: web.StreamResponse) -> web.StreamResponse:
        for text in self.warnings[:50]:
            clean = text.replace('"', "'").replace("\n", " ")
            response.headers.add("Warning", f'299 - "{clean}"')
        return response
