"""The vocabulary kinds' schemas are written in: a `Type` is one structure of
the Kubernetes API (its fields, their types and descriptions), from which the
OpenAPI documents (controlplane/api/openapi.py), pruning of unknown fields
(pruning.py) and `fieldValidation=Strict` are derived.

Each kind's module declares the types of its objects (controlplane/api/kinds/),
shared structures live in shared modules (ObjectMeta in kinds/shared/meta.py,
PodSpec and Container in kinds/shared/podspec_schema.py), and the kinds
registry gathers them all (`kinds.schema_types()`). Types list the real
Kubernetes fields (names as the Kubernetes API spells them), so that clients
that validate against the OpenAPI document accept every valid manifest; deeper
structures skiff does not interpret are declared `object` (any fields
accepted). Field types are small expressions:

  string, integer, number, boolean, time (RFC 3339 string), quantity
  (a resource quantity), int-or-string, object (free-form), map (of strings),
  map[T] (of T), []T (list of T), or the name of another type.

`struct()` and `kind()` take fields as keyword arguments (fields built by
code: a comprehension, a shared description); `declare()` reads a module's
types written as a table, one type per unindented header line, one field per
line indented by four under it:

    ReplicaSet [apps/v1 ReplicaSet]: ReplicaSet ensures that ...
        spec    ReplicaSetSpec
        status  object
    ReplicaSetSpec: ReplicaSetSpec is the specification of a ReplicaSet.
        replicas   integer        Number of desired pods. Defaults to 1.
        selector!  LabelSelector  A label query over pods that should match
                                  the replica count.

A header's `[group/version Kind]` (`[v1 Kind]` in the core group) makes it a
top-level kind (as `kind()`); a field's `!` makes it required; a line indented
by eight or more continues the one above (joined by one space); a field with
no description takes the standard one of spec, status or metadata. So a
kind's module states its fields and nothing else: no call, quotes or
parentheses per field, no group/version repeated per type.

Pure data.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

CORE = "io.k8s.api.core.v1"
APPS = "io.k8s.api.apps.v1"
BATCH = "io.k8s.api.batch.v1"
META = "io.k8s.apimachinery.pkg.apis.meta.v1"
RBAC = "io.k8s.api.rbac.v1"

LIST_META = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
SPEC = "Spec defines the desired behavior. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status"
STATUS = "Status is the most recently observed status. Populated by the system. Read-only."


@dataclass(frozen=True)
class Type:
    package: str
    description: str
    fields: dict[str, tuple[str, str]]
    required: tuple[str, ...] = ()
    kinds: tuple[tuple[str, str, str], ...] = field(default=())  # (group, version, Kind)
    # The name in the OpenAPI document when it is not the type's key (two
    # versions of one kind: `EventsV1Event` is published as ...events.v1.Event).
    name: str = ""

    def full_name(self, key: str) -> str:
        """The OpenAPI definition name: `io.k8s.api.core.v1.PodSpec`."""
        return f"{self.package}.{self.name or key}"


def struct(
    package: str,
    description: str,
    required: tuple[str, ...] = (),
    /,
    **fields: tuple[str, str],
) -> Type:
    """A structure (not a kind of its own): PodSpec, Container, ..."""
    return Type(package, description, dict(fields), required)


def kind(
    package: str,
    description: str,
    group_version_kind: tuple[str, str, str],
    required: tuple[str, ...] = (),
    /,
    **fields: tuple[str, str],
) -> Type:
    """A top-level kind: apiVersion, kind and metadata come first."""
    return Type(package, description, _BASE | dict(fields), required, (group_version_kind,))


# The fields every top-level kind starts with.
_BASE = {
    "apiVersion": (
        "string",
        "APIVersion defines the versioned schema of this representation of an object.",
    ),
    "kind": (
        "string",
        "Kind is a string value representing the REST resource this object represents.",
    ),
    "metadata": ("ObjectMeta", LIST_META),
}
# The description of a field declared without one.
_STANDARD = {"spec": SPEC, "status": STATUS, "metadata": LIST_META}
_HEADER = re.compile(r"(\w+)(?: \[(?:([^/\] ]+)/)?(\w+) (\w+)\])?:(?: (.*))?")


def declare(package: str, text: str) -> dict[str, Type]:
    """The types of a table (see the module docstring), by name, in order."""
    entries: list[tuple[int, str]] = []  # (indent, its text with continuations)
    lines = [line for line in text.splitlines() if line.strip()]
    margin = min((len(line) - len(line.lstrip()) for line in lines), default=0)
    for line in lines:
        indent = len(line) - len(line.lstrip()) - margin
        if indent >= 8 and entries:
            entries[-1] = (entries[-1][0], f"{entries[-1][1]} {line.strip()}")
        elif indent in (0, 4):
            entries.append((indent, line.strip()))
        else:
            raise ValueError(f"schema table: bad indentation: {line!r}")
    types: dict[str, Type] = {}
    header: re.Match[str] | None = None
    fields: dict[str, tuple[str, str]] = {}
    required: list[str] = []
    for indent, entry in [*entries, (0, "")]:
        if indent == 4:
            name, *expr_described = entry.split(None, 2)
            if name.endswith("!"):
                name = name[:-1]
                required.append(name)
            if (
                header is None
                or not expr_described
                or (len(expr_described) == 1 and name not in _STANDARD)
            ):
                raise ValueError(
                    f"schema table: a field needs a type, a description and a type above: {entry!r}"
                )
            expr, *described = expr_described
            # Interned, as keyword names were: a thousand fields share their names.
            fields[sys.intern(name)] = (
                sys.intern(expr),
                described[0] if described else _STANDARD[name],
            )
            continue
        if header is not None:
            key, group, version, kind_name, description = header.groups()
            if version is None:
                types[key] = struct(package, description or "", tuple(required), **fields)
            else:
                gvk = (group or "", version, kind_name)
                types[key] = kind(package, description or "", gvk, tuple(required), **fields)
        if entry:
            header = _HEADER.fullmatch(entry)
            if header is None:
                raise ValueError(f"schema table: bad header: {entry!r}")
            fields, required = {}, []
    return types
