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


_t = struct
_kind = kind

# ---- the kinds not yet in controlplane/api/kinds/ (moving there group by group) ----


TYPES: dict[str, Type] = {
    # ---- core ------------------------------------------------------------------
    # ---- apps ---------------------------------------------------------------------
    # ---- batch --------------------------------------------------------------------
    # ---- others -----------------------------------------------------------------
    # ---- accounts, RBAC and storage --------------------------------------------
    "PolicyRule": _t(
        RBAC,
        "PolicyRule holds information that describes a policy rule.",
        ("verbs",),
        verbs=("[]string", "The verbs the rule allows ('*' for all)."),
        apiGroups=("[]string", "The API groups of the resources ('' is core)."),
        resources=("[]string", "The resources the rule applies to ('*' for all)."),
        resourceNames=("[]string", "An optional allow list of object names."),
        nonResourceURLs=("[]string", "Non-resource URLs (cluster roles only)."),
    ),
    "Role": _kind(
        RBAC,
        "Role is a namespaced set of PolicyRules.",
        ("rbac.authorization.k8s.io", "v1", "Role"),
        rules=("[]PolicyRule", "The PolicyRules of this Role."),
    ),
    "ClusterRole": _kind(
        RBAC,
        "ClusterRole is a cluster-level set of PolicyRules.",
        ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
        rules=("[]PolicyRule", "The PolicyRules of this ClusterRole."),
        aggregationRule=("object", "How to build the rules from other ClusterRoles."),
    ),
    "Subject": _t(
        RBAC,
        "Subject names a user, group or service account a binding grants a role to.",
        ("kind", "name"),
        kind=("string", "User, Group or ServiceAccount."),
        apiGroup=("string", "The API group of the subject's kind."),
        name=("string", "The name of the subject."),
        namespace=("string", "The namespace of a ServiceAccount subject."),
    ),
    "RoleRef": _t(
        RBAC,
        "RoleRef names the role a binding grants.",
        ("apiGroup", "kind", "name"),
        apiGroup=("string", "The API group of the role."),
        kind=("string", "Role or ClusterRole."),
        name=("string", "The name of the role."),
    ),
    "RoleBinding": _kind(
        RBAC,
        "RoleBinding grants the permissions of a role to subjects within a namespace.",
        ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
        ("roleRef",),
        subjects=("[]Subject", "Who the role is granted to."),
        roleRef=("RoleRef", "The Role or ClusterRole granted."),
    ),
    "ClusterRoleBinding": _kind(
        RBAC,
        "ClusterRoleBinding grants the permissions of a ClusterRole to subjects cluster-wide.",
        ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
        ("roleRef",),
        subjects=("[]Subject", "Who the role is granted to."),
        roleRef=("RoleRef", "The ClusterRole granted."),
    ),
    "StorageClass": _kind(
        "io.k8s.api.storage.v1",
        "StorageClass describes the parameters for a class of storage.",
        ("storage.k8s.io", "v1", "StorageClass"),
        ("provisioner",),
        provisioner=("string", "The provisioner of volumes of this class."),
        parameters=("map", "Parameters for the provisioner."),
        reclaimPolicy=("string", "Delete or Retain, for volumes this class provisions."),
        mountOptions=("[]string", "Mount options of volumes this class provisions."),
        allowVolumeExpansion=("boolean", "Whether claims of this class may grow."),
        volumeBindingMode=("string", "Immediate or WaitForFirstConsumer."),
        allowedTopologies=("[]object", "Where volumes of this class can be provisioned."),
    ),
    "PodGroup": _kind(
        "dev.skiff.scheduling.v1alpha1",
        "PodGroup is a set of pods scheduled together (gang scheduling).",
        ("scheduling.skiff.dev", "v1alpha1", "PodGroup"),
        spec=("object", "minMember, minResources, scheduleTimeoutSeconds, ..."),
        status=("object", STATUS),
    ),
    "CustomResourceDefinition": _kind(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1",
        "CustomResourceDefinition represents a resource that should be exposed on the API server.",
        ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        ("spec",),
        spec=("CustomResourceDefinitionSpec", SPEC),
        status=("object", STATUS),
    ),
    "CustomResourceDefinitionSpec": _t(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1",
        "CustomResourceDefinitionSpec describes how a user wants their resource to appear.",
        ("group", "names", "scope", "versions"),
        group=("string", "The API group of the defined custom resource."),
        names=("object", "The resource and kind names (plural, singular, kind, shortNames, ...)."),
        scope=("string", "Cluster or Namespaced."),
        versions=("[]CustomResourceDefinitionVersion", "The API versions of the defined resource."),
        conversion=("object", "How to convert between versions (None only)."),
        preserveUnknownFields=("boolean", "Deprecated; must be false."),
    ),
    "CustomResourceDefinitionVersion": _t(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1",
        "CustomResourceDefinitionVersion describes a version for CRD.",
        ("name", "served", "storage"),
        name=("string", "The version name, e.g. v1, v2beta1."),
        served=("boolean", "Whether this version is served by REST APIs."),
        storage=("boolean", "Whether this version is the one objects are stored in."),
        deprecated=("boolean", "Whether this version is deprecated."),
        deprecationWarning=("string", "The warning returned to clients of a deprecated version."),
        schema=(
            "object",
            "The schema (openAPIV3Schema) used for validation, pruning and defaulting.",
        ),
        subresources=("object", "The status and scale subresources."),
        additionalPrinterColumns=("[]object", "Extra columns shown in kubectl get."),
        selectableFields=("[]object", "Fields that may be used as field selectors."),
    ),
}
