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
    "ReplicaSet": _kind(
        APPS,
        "ReplicaSet ensures that a specified number of pod replicas are running at any given time.",
        ("apps", "v1", "ReplicaSet"),
        spec=("ReplicaSetSpec", SPEC),
        status=("object", STATUS),
    ),
    "ReplicaSetSpec": _t(
        APPS,
        "ReplicaSetSpec is the specification of a ReplicaSet.",
        ("selector",),
        replicas=("integer", "Number of desired pods. Defaults to 1."),
        minReadySeconds=("integer", "Seconds a new pod must be ready to be available."),
        selector=("LabelSelector", "A label query over pods that should match the replica count."),
        template=(
            "PodTemplateSpec",
            "The object that describes the pod created when too few exist.",
        ),
    ),
    "Deployment": _kind(
        APPS,
        "Deployment enables declarative updates for Pods and ReplicaSets.",
        ("apps", "v1", "Deployment"),
        spec=("DeploymentSpec", SPEC),
        status=("object", STATUS),
    ),
    "DeploymentSpec": _t(
        APPS,
        "DeploymentSpec is the specification of the desired behavior of the Deployment.",
        ("selector", "template"),
        replicas=("integer", "Number of desired pods. Defaults to 1."),
        selector=("LabelSelector", "Label selector for pods. Must match the template's labels."),
        template=("PodTemplateSpec", "Template describes the pods that will be created."),
        strategy=("object", "The deployment strategy: Recreate or RollingUpdate."),
        minReadySeconds=("integer", "Seconds a new pod must be ready to be available."),
        revisionHistoryLimit=(
            "integer",
            "The number of old ReplicaSets to retain. Defaults to 10.",
        ),
        paused=("boolean", "Indicates that the deployment is paused."),
        progressDeadlineSeconds=(
            "integer",
            "Seconds before a stalled deployment is reported failed.",
        ),
    ),
    "StatefulSet": _kind(
        APPS,
        "StatefulSet represents a set of pods with consistent identities.",
        ("apps", "v1", "StatefulSet"),
        spec=("StatefulSetSpec", SPEC),
        status=("object", STATUS),
    ),
    "StatefulSetSpec": _t(
        APPS,
        "A StatefulSetSpec is the specification of a StatefulSet.",
        ("selector", "template"),
        replicas=("integer", "The desired number of replicas. Defaults to 1."),
        selector=("LabelSelector", "A label query over pods that should match the replica count."),
        template=(
            "PodTemplateSpec",
            "The object that describes the pod created when too few exist.",
        ),
        volumeClaimTemplates=("[]object", "Claims that pods are allowed to reference."),
        serviceName=("string", "The name of the service that governs this StatefulSet."),
        podManagementPolicy=("string", "OrderedReady or Parallel."),
        updateStrategy=("object", "The strategy used to update pods."),
        revisionHistoryLimit=("integer", "The number of revisions kept in history."),
        minReadySeconds=("integer", "Seconds a new pod must be ready to be available."),
        persistentVolumeClaimRetentionPolicy=("object", "The lifecycle of the claims created."),
        ordinals=("object", "The ordinal numbers of the replicas."),
    ),
    "DaemonSet": _kind(
        APPS,
        "DaemonSet represents the configuration of a daemon set.",
        ("apps", "v1", "DaemonSet"),
        spec=("DaemonSetSpec", SPEC),
        status=("object", STATUS),
    ),
    "DaemonSetSpec": _t(
        APPS,
        "DaemonSetSpec is the specification of a daemon set.",
        ("selector", "template"),
        selector=("LabelSelector", "A label query over pods that are managed by the daemon set."),
        template=("PodTemplateSpec", "An object that describes the pod that will be created."),
        updateStrategy=("object", "An update strategy to replace existing DaemonSet pods."),
        minReadySeconds=("integer", "Seconds a new pod must be ready to be available."),
        revisionHistoryLimit=("integer", "The number of old history to retain."),
    ),
    # ---- batch --------------------------------------------------------------------
    "Job": _kind(
        BATCH,
        "Job represents the configuration of a single job.",
        ("batch", "v1", "Job"),
        spec=("JobSpec", SPEC),
        status=("object", STATUS),
    ),
    "JobSpec": _t(
        BATCH,
        "JobSpec describes how the job execution will look like.",
        ("template",),
        parallelism=("integer", "The maximum desired number of pods running at any given time."),
        completions=("integer", "The desired number of successfully finished pods."),
        activeDeadlineSeconds=("integer", "Seconds the job may be active before it is terminated."),
        podFailurePolicy=("object", "How failed pods influence the backoffLimit."),
        successPolicy=("object", "When the job can be declared succeeded."),
        backoffLimit=("integer", "The number of retries before marking this job failed."),
        backoffLimitPerIndex=("integer", "The number of retries per index (Indexed jobs)."),
        maxFailedIndexes=("integer", "The maximum number of failed indexes."),
        selector=("LabelSelector", "A label query over pods that should match the pod count."),
        manualSelector=("boolean", "Whether the selector is set by the user."),
        template=(
            "PodTemplateSpec",
            "Describes the pod that will be created when executing a job.",
        ),
        ttlSecondsAfterFinished=("integer", "Seconds after which a finished job is deleted."),
        completionMode=("string", "NonIndexed or Indexed."),
        suspend=("boolean", "Whether the Job controller should create pods."),
        podReplacementPolicy=("string", "When to create replacement pods."),
        managedBy=("string", "The controller that manages the job."),
    ),
    "CronJob": _kind(
        BATCH,
        "CronJob represents the configuration of a single cron job.",
        ("batch", "v1", "CronJob"),
        spec=("CronJobSpec", SPEC),
        status=("object", STATUS),
    ),
    "CronJobSpec": _t(
        BATCH,
        "CronJobSpec describes how the job execution will look like and when it will actually run.",
        ("schedule", "jobTemplate"),
        schedule=("string", "The schedule in Cron format."),
        timeZone=("string", "The time zone name for the given schedule."),
        startingDeadlineSeconds=("integer", "Deadline in seconds for starting a missed job."),
        concurrencyPolicy=("string", "Allow, Forbid or Replace."),
        suspend=("boolean", "Suspend subsequent executions."),
        jobTemplate=("JobTemplateSpec", "The job that will be created when executing a CronJob."),
        successfulJobsHistoryLimit=("integer", "The number of successful finished jobs to retain."),
        failedJobsHistoryLimit=("integer", "The number of failed finished jobs to retain."),
    ),
    "JobTemplateSpec": _t(
        BATCH,
        "JobTemplateSpec describes the data a Job should have when created from a template.",
        metadata=("ObjectMeta", LIST_META),
        spec=("JobSpec", "Specification of the desired behavior of the job."),
    ),
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
