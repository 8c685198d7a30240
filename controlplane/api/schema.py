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

_PV_SOURCES = (
    "awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc",
    "flexVolume", "flocker", "gcePersistentDisk", "glusterfs", "hostPath", "iscsi", "local",
    "nfs", "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos",
    "vsphereVolume",
)  # fmt: skip

TYPES: dict[str, Type] = {
    # ---- pods ------------------------------------------------------------------
    "PodTemplateSpec": _t(
        CORE,
        "PodTemplateSpec describes the data a pod should have when created from a template.",
        metadata=("ObjectMeta", LIST_META),
        spec=("PodSpec", "Specification of the desired behavior of the pod."),
    ),
    "PodSpec": _t(
        CORE,
        "PodSpec is a description of a pod.",
        ("containers",),
        volumes=("[]Volume", "List of volumes that can be mounted by containers of this pod."),
        initContainers=(
            "[]Container",
            "Containers run in order, to completion, before the app containers.",
        ),
        containers=("[]Container", "List of containers belonging to the pod. At least one."),
        ephemeralContainers=("[]object", "Ephemeral containers run in this pod for debugging."),
        restartPolicy=("string", "Restart policy for all containers: Always, OnFailure or Never."),
        terminationGracePeriodSeconds=("integer", "Seconds the pod needs to terminate gracefully."),
        activeDeadlineSeconds=("integer", "Seconds the pod may be active before it is failed."),
        dnsPolicy=("string", "How DNS is set up for the pod: ClusterFirst, Default, None, ..."),
        nodeSelector=("map", "Labels a node must have for the pod to fit on it."),
        serviceAccountName=("string", "Name of the ServiceAccount used to run this pod."),
        serviceAccount=("string", "Deprecated alias of serviceAccountName."),
        automountServiceAccountToken=("boolean", "Whether a service account token is mounted."),
        nodeName=("string", "The node this pod is bound to."),
        hostNetwork=("boolean", "Use the host's network namespace."),
        hostPID=("boolean", "Use the host's pid namespace."),
        hostIPC=("boolean", "Use the host's ipc namespace."),
        shareProcessNamespace=(
            "boolean",
            "Share a single process namespace between all containers.",
        ),
        securityContext=("object", "Pod-level security attributes and common container settings."),
        imagePullSecrets=("[]object", "References to secrets used to pull the images."),
        hostname=("string", "The hostname of the pod."),
        subdomain=("string", "The pod's subdomain (with hostname, its FQDN)."),
        affinity=("object", "The pod's scheduling constraints."),
        schedulerName=("string", "The scheduler that dispatches this pod."),
        tolerations=("[]object", "The pod's tolerations."),
        hostAliases=("[]object", "Hosts and IPs injected into the pod's hosts file."),
        priorityClassName=("string", "The pod's priority class."),
        priority=("integer", "The priority value, filled from priorityClassName."),
        dnsConfig=("object", "DNS parameters of the pod."),
        readinessGates=("[]object", "Extra conditions evaluated for pod readiness."),
        runtimeClassName=("string", "The RuntimeClass used to run this pod."),
        enableServiceLinks=(
            "boolean",
            "Whether service information is injected into environment variables.",
        ),
        preemptionPolicy=("string", "PreemptLowerPriority or Never."),
        overhead=("map[quantity]", "Resource overhead of running the pod's sandbox."),
        topologySpreadConstraints=("[]object", "How the pods spread across topology domains."),
        setHostnameAsFQDN=("boolean", "Set the pod's hostname to its FQDN."),
        os=("object", "The operating system of the containers."),
        hostUsers=("boolean", "Use the host's user namespace."),
        schedulingGates=("[]object", "Gates that block scheduling while present."),
        resourceClaims=("[]object", "Resource claims the pod needs."),
        resources=("ResourceRequirements", "Total resources of the pod."),
    ),
    "Container": _t(
        CORE,
        "A single application container that you want to run within a pod.",
        ("name",),
        name=("string", "Name of the container, a DNS label unique within the pod."),
        image=("string", "Container image name."),
        command=("[]string", "Entrypoint array. Not executed within a shell."),
        args=("[]string", "Arguments to the entrypoint."),
        workingDir=("string", "The container's working directory."),
        ports=("[]ContainerPort", "Ports to expose from the container."),
        envFrom=("[]object", "Sources to populate environment variables from."),
        env=("[]EnvVar", "Environment variables to set in the container."),
        resources=("ResourceRequirements", "Compute resources required by this container."),
        resizePolicy=("[]object", "Resources resize policy for the container."),
        restartPolicy=("string", "Restart policy of an init container: Always for a sidecar."),
        volumeMounts=("[]VolumeMount", "Pod volumes to mount into the container's filesystem."),
        volumeDevices=("[]object", "Block devices used by the container."),
        livenessProbe=("Probe", "Periodic probe of container liveness: restart on failure."),
        readinessProbe=("Probe", "Periodic probe of container service readiness."),
        startupProbe=("Probe", "Probe that must succeed before the other probes run."),
        lifecycle=("object", "Actions to take in response to container lifecycle events."),
        terminationMessagePath=(
            "string",
            "File the container's termination message is written to.",
        ),
        terminationMessagePolicy=("string", "File or FallbackToLogsOnError."),
        imagePullPolicy=("string", "Always, Never or IfNotPresent."),
        securityContext=("object", "Security options the container runs with."),
        stdin=("boolean", "Allocate a buffer for stdin in the container runtime."),
        stdinOnce=("boolean", "Close stdin after the first attach ends."),
        tty=("boolean", "Allocate a TTY for the container."),
    ),
    "ContainerPort": _t(
        CORE,
        "ContainerPort represents a network port in a single container.",
        ("containerPort",),
        name=("string", "An IANA_SVC_NAME unique within the pod, referred to by services."),
        hostPort=("integer", "Port to expose on the host."),
        containerPort=("integer", "Port number to expose on the pod's IP address."),
        protocol=("string", "UDP, TCP or SCTP. Defaults to TCP."),
        hostIP=("string", "Host IP to bind the external port to."),
    ),
    "EnvVar": _t(
        CORE,
        "EnvVar represents an environment variable present in a Container.",
        ("name",),
        name=("string", "Name of the environment variable."),
        value=("string", "The variable's value; $(VAR) references are expanded."),
        valueFrom=(
            "object",
            "Source of the variable's value (field, resource, ConfigMap or Secret key).",
        ),
    ),
    "VolumeMount": _t(
        CORE,
        "VolumeMount describes a mounting of a Volume within a container.",
        ("name", "mountPath"),
        name=("string", "Name of the volume."),
        readOnly=("boolean", "Mount read-only."),
        recursiveReadOnly=("string", "Whether read-only mounts are recursively read-only."),
        mountPath=("string", "Path within the container at which the volume is mounted."),
        subPath=("string", "Path within the volume to mount instead of its root."),
        mountPropagation=("string", "How mounts are propagated between host and container."),
        subPathExpr=("string", "Expanded path within the volume to mount."),
    ),
    "Volume": _t(
        CORE,
        "Volume represents a named volume in a pod that may be accessed by any container.",
        ("name",),
        name=("string", "Name of the volume, a DNS label unique within the pod."),
        **{
            source: ("object", f"A {source} volume source.")
            for source in [
                "hostPath",
                "emptyDir",
                "gcePersistentDisk",
                "awsElasticBlockStore",
                "gitRepo",
                "secret",
                "nfs",
                "iscsi",
                "glusterfs",
                "persistentVolumeClaim",
                "rbd",
                "flexVolume",
                "cinder",
                "cephfs",
                "flocker",
                "downwardAPI",
                "fc",
                "azureFile",
                "configMap",
                "vsphereVolume",
                "quobyte",
                "azureDisk",
                "photonPersistentDisk",
                "projected",
                "portworxVolume",
                "scaleIO",
                "storageos",
                "csi",
                "ephemeral",
                "image",
            ]
        },
    ),
    "ResourceRequirements": _t(
        CORE,
        "ResourceRequirements describes the compute resource requirements.",
        limits=("map[quantity]", "The maximum amount of compute resources allowed."),
        requests=("map[quantity]", "The minimum amount of compute resources required."),
        claims=("[]object", "Resource claims used by this container."),
    ),
    "Probe": _t(
        CORE,
        "Probe describes a health check performed against a container.",
        exec=("object", "A command to run in the container."),
        httpGet=("object", "An HTTP GET request to perform."),
        tcpSocket=("object", "A TCP port to connect to."),
        grpc=("object", "A gRPC health check to call."),
        initialDelaySeconds=("integer", "Seconds after start before probes begin."),
        timeoutSeconds=("integer", "Seconds after which the probe times out."),
        periodSeconds=("integer", "How often (in seconds) to probe."),
        successThreshold=("integer", "Consecutive successes to be considered successful."),
        failureThreshold=("integer", "Consecutive failures to be considered failed."),
        terminationGracePeriodSeconds=("integer", "Grace period for a pod that fails the probe."),
    ),
    "Pod": _kind(
        CORE,
        "Pod is a collection of containers that can run on a host.",
        ("", "v1", "Pod"),
        spec=("PodSpec", SPEC),
        status=("object", STATUS),
    ),
    # ---- core ------------------------------------------------------------------
    "Namespace": _kind(
        CORE,
        "Namespace provides a scope for Names.",
        ("", "v1", "Namespace"),
        spec=("NamespaceSpec", SPEC),
        status=("object", STATUS),
    ),
    "NamespaceSpec": _t(
        CORE,
        "NamespaceSpec describes the attributes on a Namespace.",
        finalizers=("[]string", "Must be empty before the namespace is removed."),
    ),
    "Node": _kind(
        CORE,
        "Node is a worker node.",
        ("", "v1", "Node"),
        spec=("NodeSpec", SPEC),
        status=("object", STATUS),
    ),
    "NodeSpec": _t(
        CORE,
        "NodeSpec describes the attributes that a node is created with.",
        podCIDR=("string", "The pod IP range assigned to the node."),
        podCIDRs=("[]string", "The pod IP ranges assigned to the node."),
        providerID=("string", "ID of the node assigned by the cloud provider."),
        unschedulable=("boolean", "Whether new pods may be scheduled on the node."),
        taints=("[]object", "The node's taints."),
        configSource=("object", "Deprecated."),
        externalID=("string", "Deprecated."),
    ),
    "Service": _kind(
        CORE,
        "Service is a named abstraction of software service consisting of a port the proxy "
        "listens on and the selector that determines which pods answer.",
        ("", "v1", "Service"),
        spec=("ServiceSpec", SPEC),
        status=("object", STATUS),
    ),
    "ServiceSpec": _t(
        CORE,
        "ServiceSpec describes the attributes that a user creates on a service.",
        ports=("[]ServicePort", "The list of ports exposed by this service."),
        selector=("map", "Route traffic to pods with labels matching this selector."),
        clusterIP=("string", "The IP address of the service."),
        clusterIPs=("[]string", "The IP addresses of the service."),
        type=("string", "ClusterIP, NodePort, LoadBalancer or ExternalName."),
        externalIPs=("[]string", "IPs for which nodes also accept traffic for this service."),
        sessionAffinity=("string", "ClientIP or None."),
        loadBalancerIP=("string", "Deprecated."),
        loadBalancerSourceRanges=("[]string", "Client IP ranges a load balancer accepts."),
        externalName=("string", "The DNS name an ExternalName service aliases."),
        externalTrafficPolicy=("string", "Cluster or Local."),
        healthCheckNodePort=("integer", "Health check node port of a LoadBalancer service."),
        publishNotReadyAddresses=("boolean", "Publish addresses of pods that are not ready."),
        sessionAffinityConfig=("object", "Configuration of session affinity."),
        ipFamilies=("[]string", "IPv4 and/or IPv6."),
        ipFamilyPolicy=("string", "SingleStack, PreferDualStack or RequireDualStack."),
        allocateLoadBalancerNodePorts=(
            "boolean",
            "Allocate node ports for a LoadBalancer service.",
        ),
        loadBalancerClass=("string", "The class of the load balancer implementation."),
        internalTrafficPolicy=("string", "Cluster or Local."),
        trafficDistribution=("string", "How traffic is distributed to endpoints."),
    ),
    "ServicePort": _t(
        CORE,
        "ServicePort contains information on service's port.",
        ("port",),
        name=("string", "The name of this port within the service."),
        protocol=("string", "TCP, UDP or SCTP. Defaults to TCP."),
        appProtocol=("string", "The application protocol for this port."),
        port=("integer", "The port exposed by this service."),
        targetPort=("int-or-string", "Number or name of the port to access on the pods."),
        nodePort=("integer", "The port on each node (NodePort, LoadBalancer)."),
    ),
    "Endpoints": _kind(
        CORE,
        "Endpoints is a collection of endpoints that implement the actual service.",
        ("", "v1", "Endpoints"),
        subsets=("[]object", "The sets of addresses and ports that comprise a service."),
    ),
    "ConfigMap": _kind(
        CORE,
        "ConfigMap holds configuration data for pods to consume.",
        ("", "v1", "ConfigMap"),
        data=("map", "Configuration data (UTF-8)."),
        binaryData=("map", "Binary configuration data (base64)."),
        immutable=("boolean", "If true, the data cannot be updated."),
    ),
    "Secret": _kind(
        CORE,
        "Secret holds secret data of a certain type.",
        ("", "v1", "Secret"),
        data=("map", "Secret data, base64-encoded values."),
        stringData=("map", "Write-only convenience field for non-binary secret data."),
        type=("string", "Used to facilitate programmatic handling of secret data."),
        immutable=("boolean", "If true, the data cannot be updated."),
    ),
    "Event": _kind(
        CORE,
        "Event is a report of an event somewhere in the cluster.",
        ("", "v1", "Event"),
        involvedObject=("object", "The object that this event is about."),
        reason=("string", "Short, machine understandable reason for the transition."),
        message=("string", "A human-readable description of the status of this operation."),
        source=("object", "The component reporting this event."),
        firstTimestamp=("time", "The time at which the event was first recorded."),
        lastTimestamp=("time", "The time of the most recent occurrence."),
        count=("integer", "The number of times this event has occurred."),
        type=("string", "Normal or Warning."),
        eventTime=("string", "Time when this Event was first observed (microseconds)."),
        series=("object", "Data about the Event series this event represents."),
        action=("string", "What action was taken/failed regarding the object."),
        related=("object", "Optional secondary object for more complex actions."),
        reportingComponent=("string", "Name of the controller that emitted this Event."),
        reportingInstance=("string", "ID of the controller instance."),
    ),
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
    "PriorityClass": _kind(
        "io.k8s.api.scheduling.v1",
        "PriorityClass defines a mapping from a priority class name to the priority integer value.",
        ("scheduling.k8s.io", "v1", "PriorityClass"),
        ("value",),
        value=("integer", "The priority of pods of this class."),
        globalDefault=("boolean", "Whether this is the default class for pods without one."),
        description=("string", "When this priority class should be used."),
        preemptionPolicy=("string", "PreemptLowerPriority or Never."),
    ),
    # ---- accounts, RBAC and storage --------------------------------------------
    "ServiceAccount": _kind(
        CORE,
        "ServiceAccount binds together a name, a principal and a set of secrets.",
        ("", "v1", "ServiceAccount"),
        secrets=("[]object", "Secrets pods running as this account may use."),
        imagePullSecrets=("[]object", "Secrets used to pull images for pods of this account."),
        automountServiceAccountToken=("boolean", "Whether pods mount its token by default."),
    ),
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
    "PersistentVolumeClaim": _kind(
        CORE,
        "PersistentVolumeClaim is a user's request for and claim to a persistent volume.",
        ("", "v1", "PersistentVolumeClaim"),
        spec=("PersistentVolumeClaimSpec", SPEC),
        status=("object", STATUS),
    ),
    "PersistentVolumeClaimSpec": _t(
        CORE,
        "PersistentVolumeClaimSpec describes the storage a claim asks for.",
        accessModes=("[]string", "The access modes the volume should have."),
        selector=("LabelSelector", "A label query over volumes to consider for binding."),
        resources=("object", "The minimum resources the volume should have (requests, limits)."),
        volumeName=("string", "The binding reference to the volume backing this claim."),
        storageClassName=("string", "The name of the StorageClass required by the claim."),
        volumeMode=("string", "Filesystem or Block."),
        dataSource=("object", "An existing object to populate the volume from."),
        dataSourceRef=("object", "An object to populate the volume from (any group)."),
        volumeAttributesClassName=("string", "The VolumeAttributesClass used by this claim."),
    ),
    "PersistentVolume": _kind(
        CORE,
        "PersistentVolume is a storage resource provisioned by an administrator or a provisioner.",
        ("", "v1", "PersistentVolume"),
        spec=("PersistentVolumeSpec", SPEC),
        status=("object", STATUS),
    ),
    "PersistentVolumeSpec": _t(
        CORE,
        "PersistentVolumeSpec is the specification of a persistent volume.",
        capacity=("map[quantity]", "The volume's capacity (storage)."),
        accessModes=("[]string", "The ways the volume can be mounted."),
        claimRef=("object", "The claim bound to this volume."),
        persistentVolumeReclaimPolicy=("string", "Retain, Delete or Recycle."),
        storageClassName=("string", "The StorageClass this volume belongs to."),
        mountOptions=("[]string", "Mount options, e.g. ro, soft."),
        volumeMode=("string", "Filesystem or Block."),
        nodeAffinity=("object", "The nodes this volume can be accessed from."),
        volumeAttributesClassName=("string", "The VolumeAttributesClass this volume belongs to."),
        **{source: ("object", f"A {source} volume source.") for source in _PV_SOURCES},
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

# The events.k8s.io/v1 form of Event has other field names.
TYPES["EventsV1Event"] = Type(
    "io.k8s.api.events.v1",
    "Event is a report of an event somewhere in the cluster (events.k8s.io/v1).",
    {
        **{
            k: v
            for k, v in TYPES["Event"].fields.items()
            if k in ("apiVersion", "kind", "metadata")
        },
        "eventTime": ("string", "Time when this Event was first observed (microseconds)."),
        "series": ("object", "Data about the Event series this event represents."),
        "reportingController": ("string", "The controller that emitted this Event."),
        "reportingInstance": ("string", "ID of the controller instance."),
        "action": ("string", "What action was taken/failed regarding the regarding object."),
        "reason": ("string", "Why the action was taken."),
        "regarding": ("object", "The object this Event is about."),
        "related": ("object", "Optional secondary object for more complex actions."),
        "note": ("string", "A human-readable description of the status of this operation."),
        "type": ("string", "Normal or Warning."),
        "deprecatedSource": ("object", "Deprecated field of core/v1 Event."),
        "deprecatedFirstTimestamp": ("time", "Deprecated field of core/v1 Event."),
        "deprecatedLastTimestamp": ("time", "Deprecated field of core/v1 Event."),
        "deprecatedCount": ("integer", "Deprecated field of core/v1 Event."),
    },
    ("eventTime",),
    (("events.k8s.io", "v1", "Event"),),
    name="Event",
)
