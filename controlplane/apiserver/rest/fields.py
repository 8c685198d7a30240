"""Field managers and field validation of a write, as Kubernetes has them.

Every write but an apply records an Update entry in metadata.managedFields
for its manager, which the registry records (whatever the transport): the
`fieldManager` query parameter, else the program name the User-Agent starts
with (as kube-apiserver derives it; controlplane.apiserver.fieldmanager). `fieldValidation=Strict|Warn|Ignore` decides what
unknown, mistyped or repeated fields do: refused (400), reported in
`Warning` headers, or dropped silently (a repeated key: the last one kept, as
orjson and Go's decoders keep it; found by intake.py as the body is decoded). Built-in kinds are checked against the OpenAPI schema,
custom kinds against their CRD's structural schema.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from controlplane.api import crd, duplicates, openapi
from controlplane.apiserver import fieldmanager
from controlplane.apiserver.fieldmanager import FieldManager
from controlplane.apiserver.rest import body
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
        self.media = body.media_type(call.request)
        self.repeats = call.request.get(body.REPEATS)  # keys the body repeats (intake.py)
        self.warnings: list[str] = []

    def check(self, obj: Object) -> None:
        """Refuse (Strict) or note as warnings (Warn) the unknown fields of
        `obj` and the keys the body repeated, as kube-apiserver orders them."""
        if self.mode == "Ignore":
            return
        found = problems(self.key, obj)
        repeats = self.repeats
        if repeats is not None and repeats.yaml:
            found = self._yaml(repeats.yaml, found)
        elif repeats is not None and repeats.json is not None:
            found = self._json(repeats.json, found)
        if found and self.mode == "Strict":
            raise BadRequest(f"strict decoding error: {', '.join(found)}")
        # A YAML error is one per repeated key in warnings (parseYAMLWarnings).
        self.warnings = [w for text in found for w in text.split("\n  ")[text.startswith(_YAML) :]]

    def _yaml(self, lines: list[str], found: list[str]) -> list[str]:
        """go-yaml's strict error first; an apply's alone, in its own words."""
        if self.media == APPLY and self.mode == "Strict":
            raise BadRequest(
                f"error strict decoding patch: error converting YAML to JSON: {_YAML}"
                + "".join(f"\n  {line}" for line in lines)
            )
        return [_YAML + "".join(f"\n  {line}" for line in lines), *found]

    def _json(self, repeats: duplicates.Found, found: list[str]) -> list[str]:
        """A patch's repeats come first (its own decode), then the patched
        object's problems; a custom resource's too (decoded as a map, then
        pruned). A built-in kind's body is one strict decode: its problems in
        text order, a repeated key of an unknown field reported as unknown."""
        if self.media in PATCHES:
            return [*repeats.texts("json patch " if self.media == JSON_PATCH else ""), *found]
        if crd.is_custom(self.key):
            return [*repeats.texts(), *found]
        unknown = [text[15:-1] for text in found if text.startswith('unknown field "')]
        placed = [(repeats.first.get(_path_of(text), _LAST), text) for text in found]
        placed += [(at, f'duplicate field "{path}"') for at, path in repeats.duplicates
                   if not any(_under(path, u) for u in unknown)]  # fmt: skip
        placed.sort(key=lambda item: item[0])
        return [text for _, text in placed]

    def field_manager(self, applied: bool = False) -> FieldManager:
        """Who the registry records this write for (an apply records its own entry)."""
        return FieldManager(self.manager, applied)

    def headers(self, response: web.StreamResponse) -> web.StreamResponse:
        return add_warnings(response, self.warnings)


APPLY = "application/apply-patch+yaml"
JSON_PATCH = "application/json-patch+json"
PATCHES = frozenset({JSON_PATCH, "application/merge-patch+json",
                     "application/strategic-merge-patch+json"})  # fmt: skip
_YAML = "yaml: unmarshal errors:"
_LAST = 1 << 62


def _path_of(problem: str) -> str:
    """The field path a problem names: `unknown field "a.b"`, `a.b: expected ...`."""
    if problem.startswith('unknown field "'):
        return problem[15:-1]
    return problem.partition(": ")[0]


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith((f"{top}.", f"{top}["))


def add_warnings(response: web.StreamResponse, warnings: list[str]) -> web.StreamResponse:
    """`Warning: 299 - "text"` headers, as kube-apiserver sends them (at most 50)."""
    for text in warnings[:50]:
        # A quoted-string (RFC 9110): kubectl prints it unescaped.
        clean = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")
        response.headers.add("Warning", f'299 - "{clean}"')
    return response
