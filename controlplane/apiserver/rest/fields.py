"""Field managers and field validation of a write, as Kubernetes has them.

Every write but an apply records an Update entry in metadata.managedFields
for its manager, which the registry records (whatever the transport): the
`fieldManager` query parameter, else the program name the User-Agent starts
with (as kube-apiserver derives it; controlplane.apiserver.fieldmanager). `fieldValidation=Strict|Warn|Ignore` decides what
unknown or mistyped fields do: refused (400), reported in `Warning` headers,
or dropped silently. Built-in kinds are checked against the OpenAPI schema,
custom kinds against their CRD's structural schema.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from controlplane.api import crd, openapi
from controlplane.apiserver import fieldmanager
from controlplane.apiserver.fieldmanager import FieldManager
from controlplane.apiserver.rest.context import Call
from controlplane.apiserver.rest.status import BadRequest
from controlplane.client.errors import Invalid

Object = dict[str, Any]
VALIDATION = ("Strict", "Warn", "Ignore")


def manager(call: Call) -> str:
    name = call.query("fieldManager")
    if not name:
        name = fieldmanager.from_user_agent(call.request.headers.get("User-Agent", ""))
        return name or "unknown"
    try:
        return fieldmanager.checked(name)
    except Invalid as err:
        raise BadRequest(str(err)) from None


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
        return [f'unknown field "{path}"' for path in crd.unknown_fields(key, obj)]
    return openapi.validate(obj)


class Write:
    """One write's manager, validation mode and the warnings it gathered."""

    def __init__(self, call: Call) -> None:
        self.key = call.target.info.key
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

    def field_manager(self, applied: bool = False) -> FieldManager:
        """Who the registry records this write for (an apply records its own entry)."""
        return FieldManager(self.manager, applied)

    def headers(self, response: web.StreamResponse) -> web.StreamResponse:
        return add_warnings(response, self.warnings)


def add_warnings(response: web.StreamResponse, warnings: list[str]) -> web.StreamResponse:
    """`Warning: 299 - "text"` headers, as kube-apiserver sends them (at most 50)."""
    for text in warnings[:50]:
        # A quoted-string (RFC 9110): kubectl prints it unescaped.
        clean = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")
        response.headers.add("Warning", f'299 - "{clean}"')
    return response
