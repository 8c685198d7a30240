"""The schema of the pod spec every pod template shares: PodTemplateSpec,
PodSpec, Container and their parts, complete at their top level (deeper
structures skiff does not interpret are `object`). Pure data."""

from __future__ import annotations

from controlplane.api.schema import CORE, Type, declare, struct

TYPES: dict[str, Type] = {
    **declare(
        CORE,
        """
        PodTemplateSpec: PodTemplateSpec describes the data a pod should have when created from a
                         template.
            metadata  ObjectMeta
            spec      PodSpec     Specification of the desired behavior of the pod.
        PodSpec: PodSpec is a description of a pod.
            volumes                        []Volume              List of volumes that can be mounted
                                                                 by containers of this pod.
            initContainers                 []Container           Containers run in order, to
                                                                 completion, before the app
                                                                 containers.
            containers!                    []Container           List of containers belonging to the
                                                                 pod. At least one.
            ephemeralContainers            []object              Ephemeral containers run in this
                                                                 pod for debugging.
            restartPolicy                  string                Restart policy for all containers:
                                                                 Always, OnFailure or Never.
            terminationGracePeriodSeconds  integer               Seconds the pod needs to terminate
                                                                 gracefully.
            activeDeadlineSeconds          integer               Seconds the pod may be active
                                                                 before it is failed.
            dnsPolicy                      string                How DNS is set up for the pod:
                                                                 ClusterFirst, Default, None, ...
            nodeSelector                   map                   Labels a node must have for the pod
                                                                 to fit on it.
            serviceAccountName             string                Name of the ServiceAccount used to
                                                                 run this pod.
            serviceAccount                 string                Deprecated alias of
                                                                 serviceAccountName.
            automountServiceAccountToken   boolean               Whether a service account token is
                                                                 mounted.
            nodeName                       string                The node this pod is bound to.
            hostNetwork                    boolean               Use the host's network namespace.
            hostPID                        boolean               Use the host's pid namespace.
            hostIPC                        boolean               Use the host's ipc namespace.
            shareProcessNamespace          boolean               Share a single process namespace
                                                                 between all containers.
            securityContext                object                Pod-level security attributes and
                                                                 common container settings.
            imagePullSecrets               []object              References to secrets used to pull
                                                                 the images.
            hostname                       string                The hostname of the pod.
            subdomain                      string                The pod's subdomain (with hostname,
                                                                 its FQDN).
            affinity                       object                The pod's scheduling constraints.
            schedulerName                  string                The scheduler that dispatches this
                                                                 pod.
            tolerations                    []object              The pod's tolerations.
            hostAliases                    []object              Hosts and IPs injected into the
                                                                 pod's hosts file.
            priorityClassName              string                The pod's priority class.
            priority                       integer               The priority value, filled from
                                                                 priorityClassName.
            dnsConfig                      object                DNS parameters of the pod.
            readinessGates                 []object              Extra conditions evaluated for pod
                                                                 readiness.
            runtimeClassName               string                The RuntimeClass used to run this
                                                                 pod.
            enableServiceLinks             boolean               Whether service information is
                                                                 injected into environment
                                                                 variables.
            preemptionPolicy               string                PreemptLowerPriority or Never.
            overhead                       map[quantity]         Resource overhead of running the
                                                                 pod's sandbox.
            topologySpreadConstraints      []object              How the pods spread across topology
                                                                 domains.
            setHostnameAsFQDN              boolean               Set the pod's hostname to its FQDN.
            os                             object                The operating system of the
                                                                 containers.
            hostUsers                      boolean               Use the host's user namespace.
            schedulingGates                []object              Gates that block scheduling while
                                                                 present.
            resourceClaims                 []object              Resource claims the pod needs.
            resources                      ResourceRequirements  Total resources of the pod.
        Container: A single application container that you want to run within a pod.
            name!                     string                Name of the container, a DNS label
                                                            unique within the pod.
            image                     string                Container image name.
            command                   []string              Entrypoint array. Not executed within a
                                                            shell.
            args                      []string              Arguments to the entrypoint.
            workingDir                string                The container's working directory.
            ports                     []ContainerPort       Ports to expose from the container.
            envFrom                   []object              Sources to populate environment
                                                            variables from.
            env                       []EnvVar              Environment variables to set in the
                                                            container.
            resources                 ResourceRequirements  Compute resources required by this
                                                            container.
            resizePolicy              []object              Resources resize policy for the
                                                            container.
            restartPolicy             string                Restart policy of an init container:
                                                            Always for a sidecar.
            volumeMounts              []VolumeMount         Pod volumes to mount into the
                                                            container's filesystem.
            volumeDevices             []object              Block devices used by the container.
            livenessProbe             Probe                 Periodic probe of container liveness:
                                                            restart on failure.
            readinessProbe            Probe                 Periodic probe of container service
                                                            readiness.
            startupProbe              Probe                 Probe that must succeed before the other
                                                            probes run.
            lifecycle                 object                Actions to take in response to container
                                                            lifecycle events.
            terminationMessagePath    string                File the container's termination message
                                                            is written to.
            terminationMessagePolicy  string                File or FallbackToLogsOnError.
            imagePullPolicy           string                Always, Never or IfNotPresent.
            securityContext           object                Security options the container runs
                                                            with.
            stdin                     boolean               Allocate a buffer for stdin in the
                                                            container runtime.
            stdinOnce                 boolean               Close stdin after the first attach ends.
            tty                       boolean               Allocate a TTY for the container.
        ContainerPort: ContainerPort represents a network port in a single container.
            name            string   An IANA_SVC_NAME unique within the pod, referred to by
                                     services.
            hostPort        integer  Port to expose on the host.
            containerPort!  integer  Port number to expose on the pod's IP address.
            protocol        string   UDP, TCP or SCTP. Defaults to TCP.
            hostIP          string   Host IP to bind the external port to.
        EnvVar: EnvVar represents an environment variable present in a Container.
            name!      string  Name of the environment variable.
            value      string  The variable's value; $(VAR) references are expanded.
            valueFrom  object  Source of the variable's value (field, resource, ConfigMap or Secret
                               key).
        VolumeMount: VolumeMount describes a mounting of a Volume within a container.
            name!              string   Name of the volume.
            readOnly           boolean  Mount read-only.
            recursiveReadOnly  string   Whether read-only mounts are recursively read-only.
            mountPath!         string   Path within the container at which the volume is mounted.
            subPath            string   Path within the volume to mount instead of its root.
            mountPropagation   string   How mounts are propagated between host and container.
            subPathExpr        string   Expanded path within the volume to mount.
        """,
    ),
    "Volume": struct(
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
    **declare(
        CORE,
        """
        ResourceRequirements: ResourceRequirements describes the compute resource requirements.
            limits    map[quantity]  The maximum amount of compute resources allowed.
            requests  map[quantity]  The minimum amount of compute resources required.
            claims    []object       Resource claims used by this container.
        Probe: Probe describes a health check performed against a container.
            exec                           object   A command to run in the container.
            httpGet                        object   An HTTP GET request to perform.
            tcpSocket                      object   A TCP port to connect to.
            grpc                           object   A gRPC health check to call.
            initialDelaySeconds            integer  Seconds after start before probes begin.
            timeoutSeconds                 integer  Seconds after which the probe times out.
            periodSeconds                  integer  How often (in seconds) to probe.
            successThreshold               integer  Consecutive successes to be considered
                                                    successful.
            failureThreshold               integer  Consecutive failures to be considered failed.
            terminationGracePeriodSeconds  integer  Grace period for a pod that fails the probe.
        """,
    ),
}
