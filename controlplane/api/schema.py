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

Pure data.
"""

from __future__ import annotations

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
    base = {
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
    return Type(package, description, base | dict(fields), required, (group_version_kind,))
