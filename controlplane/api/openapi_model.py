"""The types the OpenAPI documents describe, to the leaves: the kinds'
schema types (kinds.schema_types(): their descriptions, required fields and
group/version/kinds) joined with the structure of Kubernetes' messages in
the protobuf table (controlplane/api/k8sproto/table.py: every field's JSON
name and type), by Kubernetes' definition name
(`io.k8s.api.core.v1.PodCondition`).

A field both describe takes its type from the table (int32 or int64, the
nested message where a schema type says `object`) and its description from
the schema type; a field or type only the table knows gets a description
from openapi_texts.py, else one made from its name. Inlined messages (a
Volume's VolumeSource, a Probe's handler) are flattened into their parent,
as Go's JSON writes them.

`model()` maps each definition name to a `Definition` whose field
expressions are schema.py's (string, integer, boolean, []T, map[T], ...)
plus `int32` and `bytes`, with nested types named by their definition names,
and time, quantity and int-or-string named as Kubernetes' definitions of
them (TIME, QUANTITY, INT_OR_STRING; MICRO_TIME where the table says so). Built at the first OpenAPI document asked for (openapi_doc.py), never
at rest. Pure: no I/O.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from controlplane.api import openapi_texts
from controlplane.api.k8sproto.table import TABLE
from controlplane.api.kinds.registry import schema_types


@dataclass(frozen=True)
class Definition:
    description: str
    fields: dict[str, tuple[str, str]]  # JSON name -> (expression, description)
    required: tuple[str, ...] = ()
    kinds: tuple[tuple[str, str, str], ...] = ()  # (group, version, Kind)


# Table package -> the prefix of Kubernetes' definition names.
_PACKAGES = {
    "meta/v1": "io.k8s.apimachinery.pkg.apis.meta.v1",
    "apiregistration/v1": "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1",
    "resource": "io.k8s.apimachinery.pkg.api.resource",
    "intstr": "io.k8s.apimachinery.pkg.util.intstr",
    "runtime": "io.k8s.apimachinery.pkg.runtime",
}
TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
MICRO_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
# Messages whose JSON is not an object: the expression each is written as
# (the four above are definitions of their own, as Kubernetes publishes them).
_SPECIAL = {
    "meta/v1.Time": TIME,
    "meta/v1.MicroTime": MICRO_TIME,
    "meta/v1.Duration": "string",
    "meta/v1.FieldsV1": "object",
    "runtime.RawExtension": "object",
    "resource.Quantity": QUANTITY,
    "intstr.IntOrString": INT_OR_STRING,
}
# schema.py's scalar expressions Kubernetes publishes as definitions.
_NAMED = {"time": TIME, "quantity": QUANTITY, "int-or-string": INT_OR_STRING}
_SCALARS = {"s": "string", "b": "boolean", "y": "bytes", "i32": "int32", "i64": "integer"}


_OBJECT_META = {
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
}
_TYPE_META = {
    "apiVersion": ("string", "The group/version of the object's schema (v1, apps/v1, ...)."),
    "kind": ("string", "The kind of the object (Pod, Deployment, ...)."),
}


def definition_name(message: str) -> str:
    """`core/v1.PodCondition` -> `io.k8s.api.core.v1.PodCondition`."""
    package, _, name = message.rpartition(".")
    prefix = _PACKAGES.get(package) or "io.k8s.api." + package.replace("/", ".")
    return f"{prefix}.{name}"


def _proto() -> dict[str, list[tuple[str, str]]]:
    """Definition name -> [(JSON name, expression)] of every object message
    of the table, inlined messages flattened."""
    rows: dict[str, tuple[str, list[list[str]]]] = {}
    arrays: set[str] = set()
    for line in TABLE.split("\n"):
        if not line:
            continue
        name, *specs = line.split()
        if specs[:1] == ["!array"]:
            arrays.add(name)
            specs = specs[1:]
        rows[name] = (name.rpartition(".")[0], [s.split(",") for s in specs])

    def expr(package: str, type_: str) -> str:
        if type_.startswith("[]"):
            return "[]" + expr(package, type_[2:])
        if type_.startswith("{"):
            return f"map[{expr(package, type_[1:-1])}]"
        if type_ in _SCALARS:
            return _SCALARS[type_]
        message = type_ if "." in type_ else f"{package}.{type_}"
        if message in arrays:
            return "[]string"  # ExtraValue, Verbs: JSON writes their one list
        return _SPECIAL.get(message) or definition_name(message)

    def fields(message: str) -> list[tuple[str, str]]:
        package, specs = rows[message]
        out: list[tuple[str, str]] = []
        for spec in specs:
            json_name, type_, flags = spec[1], spec[2], spec[3] if len(spec) > 3 else ""
            if "i" in flags:
                inner = type_ if "." in type_ else f"{package}.{type_}"
                out += fields(inner)
            else:
                out.append((json_name, expr(package, type_)))
        return out

    return {definition_name(m): fields(m) for m in rows if m not in _SPECIAL and m not in arrays}


def _schema_expr(expr: str) -> str:
    """A schema type's field expression with type keys made definition names."""
    if expr.startswith("[]"):
        return "[]" + _schema_expr(expr[2:])
    if expr.startswith("map[") and expr.endswith("]"):
        return f"map[{_schema_expr(expr[4:-1])}]"
    types = schema_types()
    return types[expr].full_name(expr) if expr in types else _NAMED.get(expr, expr)


def _inner(expr: str) -> str:
    """The type a field expression holds: `[]map[X]` -> `X`."""
    while True:
        if expr.startswith("[]"):
            expr = expr[2:]
        elif expr.startswith("map[") and expr.endswith("]"):
            expr = expr[4:-1]
        else:
            return expr


@functools.cache
def model() -> dict[str, Definition]:
    """Every definition, by Kubernetes' definition name (built once)."""
    proto = _proto()
    schemas = {t.full_name(k): t for k, t in schema_types().items()}
    out: dict[str, Definition] = {}
    for name in (*schemas, *(n for n in proto if n not in schemas)):
        t = schemas.get(name)
        own = {f: (_schema_expr(e), d) for f, (e, d) in t.fields.items()} if t else {}
        fields: dict[str, tuple[str, str]] = {}
        if t is None and dict(proto[name]).get("metadata") in _OBJECT_META:
            fields.update(_TYPE_META)  # a kind (or list): Go embeds TypeMeta, protobuf does not
        for fname, expr in proto.get(name, ()):
            fields[fname] = (expr, own[fname][1] if fname in own else "")
        for fname, (expr, desc) in own.items():
            fields.setdefault(fname, (expr, desc))
        out[name] = Definition(
            t.description if t else _type_text(name.rpartition(".")[2]),
            fields,
            t.required if t else (),
            t.kinds if t else (),
        )
    for name, d in out.items():
        for fname, (expr, desc) in d.fields.items():
            if not desc:
                d.fields[fname] = (expr, _describe(name, fname, expr, out))
    return out


def _describe(owner: str, fname: str, expr: str, defs: dict[str, Definition]) -> str:
    """A field's description where no schema type gives one: openapi_texts'
    own, else the purpose of the type it holds, else its name in words."""
    texts = openapi_texts.FIELDS
    short = owner.rpartition(".")[2]
    text = texts.get(f"{short}.{fname}") or texts.get(fname)
    if short.endswith("Condition") and fname in ("type", "status"):
        text = text or texts[f"Condition.{fname}"]
    alias = defs.get(_ALIASES.get(owner, ""))
    if not text and alias is not None and fname in alias.fields:
        text = alias.fields[fname][1]
    if text:
        return text
    inner = _inner(expr)
    if inner in defs:
        if expr.startswith("[]"):
            return f"{_words(fname)}, a list. Each item: {defs[inner].description}"
        if expr.startswith("map["):
            return f"{_words(fname)}, by name. Each: {defs[inner].description}"
        return defs[inner].description
    return f"{_words(fname)}{_HINTS.get(inner, '')}."


# Types whose fields are another's, described there (an ephemeral container's
# fields are a container's).
_ALIASES = {"io.k8s.api.core.v1.EphemeralContainer": "io.k8s.api.core.v1.Container"}

# Suffix of a type's name -> its description ({} is the rest of the name, in words).
_SUFFIXES = (
    ("PersistentVolumeSource", "A persistent volume backed by {}."),
    ("VolumeSource", "A volume backed by {}."),
    ("Projection", "What a projected volume takes from {}."),
    ("Condition", "One condition of {}: its type, whether it holds, and why it last changed."),
    ("Status", "The observed state of {}, as the system last saw it."),
    ("Spec", "The desired state of {}."),
    ("Reference", "A reference to {}."),
    ("Strategy", "How {} is carried out."),
)


def _type_text(short: str) -> str:
    """The description of a type no schema type describes."""
    text = openapi_texts.TYPES.get(short)
    if text:
        return text
    for suffix, template in _SUFFIXES:
        rest = short.removesuffix(suffix)
        if rest != short and rest:
            return template.format(
                _article(_words(rest).lower() if rest[1:2].islower() else _words(rest))
            )
    return _words(short) + "."


def _article(words: str) -> str:
    first = words.split()[0]
    acronym = _acronym(first)
    vowel = first[0] in ("AEFHILMNORSX" if acronym else "aeiouAEIOU")
    return ("an " if vowel else "a ") + words


_HINTS = {
    TIME: " (an RFC 3339 time)",
    MICRO_TIME: " (an RFC 3339 time with microseconds)",
    QUANTITY: " (a resource quantity, such as 100m or 1Gi)",
    INT_OR_STRING: " (a number, or a string such as a percentage or a port name)",
    "bytes": " (base64-encoded bytes)",
}
_CAMEL = re.compile(r"[A-Z]{2,}s(?=[A-Z]|$)|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


_ACRONYMS = {"api": "API", "ip": "IP", "ips": "IPs", "uid": "UID", "id": "ID", "url": "URL",
             "dns": "DNS", "tls": "TLS", "cidr": "CIDR", "cidrs": "CIDRs", "uri": "URI",
             "tcp": "TCP", "udp": "UDP", "http": "HTTP", "grpc": "gRPC", "os": "OS"}  # fmt: skip


def _words(name: str) -> str:
    """`maxSurge` -> `Max surge`, `HTTPGetAction` -> `HTTP get action`."""
    parts = _CAMEL.findall(name) or [name]
    out = [p if _acronym(p) else _ACRONYMS.get(p.lower(), p.lower()) for p in parts]
    first = out[0]
    return " ".join([first[:1].upper() + first[1:], *out[1:]])


def _acronym(word: str) -> bool:
    """HTTP, WWNs: capitals (a plural s allowed), kept as written."""
    stem = word.removesuffix("s")
    return len(stem) > 1 and stem.isupper()
