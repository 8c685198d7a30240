"""The Swagger 2.0 document in the protobuf form kubectl downloads.

kubectl (client-go's discovery) asks `/openapi/v2` for
`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`: the
`openapi.v2.Document` message of gnostic's OpenAPIv2.proto. It reads it for
client-side validation and, when the server has no OpenAPI v3, for
strategic merge patch facts and `kubectl explain`. This module writes that
message straight from the JSON document (controlplane/api/openapi.py), with
a small protobuf wire encoder and the field numbers of OpenAPIv2.proto, for
the parts of Swagger 2.0 the document uses: info, paths (operations with
path/query parameters, responses, vendor extensions) and definitions
(schemas with type, format, description, $ref, properties, items,
additionalProperties, required, enum, bounds, allOf and vendor extensions,
whose values are carried as YAML as gnostic does). Pure.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import yaml

# Field numbers from gnostic's openapiv2/OpenAPIv2.proto.
_DOCUMENT = {"swagger": 1, "info": 2, "paths": 8, "definitions": 9}
_INFO = {"title": 1, "version": 2, "description": 3}
_PATH_ITEM = {"$ref": 1, "get": 2, "put": 3, "post": 4, "delete": 5, "patch": 8, "parameters": 9}
_PATH_ITEM_EXT = 10
_OPERATION = {
    "tags": 1,
    "summary": 2,
    "description": 3,
    "operationId": 5,
    "produces": 6,
    "consumes": 7,
    "parameters": 8,
    "responses": 9,
}
_OPERATION_EXT = 13
# Query (3) and path (4) parameter sub-schemas of NonBodyParameter.
_QUERY_PARAM = {"required": 1, "in": 2, "description": 3, "name": 4, "type": 6, "uniqueItems": 20}
_PATH_PARAM = {"required": 1, "in": 2, "description": 3, "name": 4, "type": 5, "uniqueItems": 19}
_SCHEMA = {
    "$ref": 1,
    "format": 2,
    "title": 3,
    "description": 4,
    "default": 5,
    "multipleOf": 6,
    "maximum": 7,
    "exclusiveMaximum": 8,
    "minimum": 9,
    "exclusiveMinimum": 10,
    "maxLength": 11,
    "minLength": 12,
    "pattern": 13,
    "maxItems": 14,
    "minItems": 15,
    "uniqueItems": 16,
    "maxProperties": 17,
    "minProperties": 18,
    "required": 19,
    "enum": 20,
    "additionalProperties": 21,
    "type": 22,
    "items": 23,
    "allOf": 24,
    "properties": 25,
    "readOnly": 27,
    "example": 30,
}
_SCHEMA_EXT = 31
_DOUBLES = {"multipleOf", "maximum", "minimum"}
_ANYS = {"default", "enum", "example"}


# ---- wire format ------------------------------------------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _tag(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _bytes(field: int, data: bytes) -> bytes:
    return _tag(field, 2) + _varint(len(data)) + data


def _string(field: int, text: str) -> bytes:
    return _bytes(field, text.encode())


def _int(field: int, value: int) -> bytes:
    return _tag(field, 0) + _varint(int(value))


def _double(field: int, value: float) -> bytes:
    return _tag(field, 1) + struct.pack("<d", float(value))


# ---- messages ------------------------------------------------------------------------


def _any(value: Any) -> bytes:
    """gnostic's Any: the value as YAML (field 2)."""
    return _string(2, yaml.safe_dump(value, default_flow_style=False))


def _named_any(field: int, name: str, value: Any) -> bytes:
    return _bytes(field, _string(1, name) + _bytes(2, _any(value)))


def _extensions(field: int, obj: dict[str, Any]) -> bytes:
    return b"".join(_named_any(field, k, v) for k, v in obj.items() if k.startswith("x-"))


def _scalar(field: int, value: Any) -> bytes:
    if isinstance(value, bool):
        return _int(field, int(value))
    if isinstance(value, int):
        return _int(field, value)
    return _string(field, str(value))


def _known(fields: dict[str, int], obj: dict[str, Any]) -> Iterator[tuple[str, int, Any]]:
    """(key, field number, value) for each key of `obj` the message has a field for."""
    for key, value in obj.items():
        number = fields.get(key)
        if number is not None:
            yield key, number, value


def _flat(fields: dict[str, int], obj: dict[str, Any]) -> bytes:
    out = b""
    for _key, number, value in _known(fields, obj):
        if isinstance(value, list):
            out += b"".join(_scalar(number, v) for v in value)
        else:
            out += _scalar(number, value)
    return out


def schema(s: dict[str, Any]) -> bytes:
    """An openapi.v2.Schema message."""
    out = b""
    for key, number, value in _known(_SCHEMA, s):
        if key in _DOUBLES:
            out += _double(number, value)
        elif key == "enum":
            out += b"".join(_bytes(number, _any(v)) for v in value)
        elif key in _ANYS:
            out += _bytes(number, _any(value))
        elif key == "type":
            types = value if isinstance(value, list) else [value]
            out += _bytes(number, b"".join(_string(1, t) for t in types))
        elif key == "items":
            items = value if isinstance(value, list) else [value]
            out += _bytes(number, b"".join(_bytes(1, schema(i)) for i in items))
        elif key == "allOf":
            out += b"".join(_bytes(number, schema(i)) for i in value)
        elif key == "properties":
            out += _bytes(number, _named_schemas(value))
        elif key == "additionalProperties":
            inner = _bytes(1, schema(value)) if isinstance(value, dict) else _int(2, bool(value))
            out += _bytes(number, inner)
        elif key == "required":
            out += b"".join(_string(number, r) for r in value)
        else:
            out += _scalar(number, value)
    return out + _extensions(_SCHEMA_EXT, s)


def _named_schemas(schemas: dict[str, Any]) -> bytes:
    return b"".join(
        _bytes(1, _string(1, name) + _bytes(2, schema(s))) for name, s in schemas.items()
    )


def _parameter(p: dict[str, Any]) -> bytes:
    """A ParametersItem holding a query or path parameter."""
    if p.get("in") == "path":
        sub = _bytes(4, _flat(_PATH_PARAM, p))
    else:
        sub = _bytes(3, _flat(_QUERY_PARAM, p))
    return _bytes(1, _bytes(2, sub))  # ParametersItem.parameter -> Parameter.non_body_parameter


def _responses(responses: dict[str, Any]) -> bytes:
    out = b""
    for code, r in responses.items():
        body = _string(1, str(r.get("description", "")))
        if isinstance(r.get("schema"), dict):
            body += _bytes(2, _bytes(1, schema(r["schema"])))  # SchemaItem.schema
        out += _bytes(1, _string(1, code) + _bytes(2, _bytes(1, body)))
    return out


def _operation(op: dict[str, Any]) -> bytes:
    out = b""
    for key, number, value in _known(_OPERATION, op):
        if key == "parameters":
            out += b"".join(_bytes(number, _parameter(p)) for p in value)
        elif key == "responses":
            out += _bytes(number, _responses(value))
        elif isinstance(value, list):
            out += b"".join(_string(number, v) for v in value)
        else:
            out += _string(number, str(value))
    return out + _extensions(_OPERATION_EXT, op)


def _path_item(item: dict[str, Any]) -> bytes:
    out = b""
    for key, number, value in _known(_PATH_ITEM, item):
        if key == "parameters":
            out += b"".join(_bytes(number, _parameter(p)) for p in value)
        elif key == "$ref":
            out += _string(number, value)
        else:
            out += _bytes(number, _operation(value))
    return out + _extensions(_PATH_ITEM_EXT, item)


def encode_v2(doc: dict[str, Any]) -> bytes:
    """The openapi.v2.Document message of a Swagger 2.0 JSON document."""
    out = _string(_DOCUMENT["swagger"], str(doc.get("swagger", "2.0")))
    out += _bytes(_DOCUMENT["info"], _flat(_INFO, doc.get("info") or {}))
    paths = b"".join(
        _bytes(2, _string(1, path) + _bytes(2, _path_item(item)))
        for path, item in (doc.get("paths") or {}).items()
    )
    out += _bytes(_DOCUMENT["paths"], paths)
    out += _bytes(_DOCUMENT["definitions"], _named_schemas(doc.get("definitions") or {}))
    return out
