"""One example of every built-in kind skiff serves that Kubernetes has
protobuf for, each using the fields whose encodings differ from plain
scalars: Time, MicroTime, Quantity, IntOrString, bytes, pointer fields at
their zero value, maps, repeated messages, structs Go embeds inline.

A non-pointer field Go's JSON omits when zero (`omitempty`) is left out at
its zero value here, as Go's JSON leaves it out: protobuf cannot tell it
from unset, so neither can Kubernetes."""

from __future__ import annotations

from typing import Any

T = "2026-11-26T00:35:38Z"
MICRO = "2026-11-26T00:35:38.123456Z"
META = {"name": "ex", "namespace": "default", "labels": {"app": "web", "tier": "1"},
        "annotations": {"note": "ünïcode ✓"}}  # fmt: skip

CONTAINER = {
    "name": "main",
    "image": "registry.local/web:1.0",
    "command": ["/bin/sh", "-c"],
    "args": ["exec httpd -f"],
    "ports": [{"containerPort": 8080, "protocol": "TCP", "name": "http"}],
    "env": [
        {"name": "MODE", "value": "prod"},
        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {
            "name": "CPU",
            "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}},
        },
    ],
    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "1"}},
    "livenessProbe": {
        "httpGet": {"path": "/", "port": "http"},
        "periodSeconds": 10,
        "timeoutSeconds": 1,
        "successThreshold": 1,
        "failureThreshold": 3,
    },
    "readinessProbe": {"tcpSocket": {"port": 8080}, "initialDelaySeconds": 5},
    "securityContext": {
        "runAsUser": 0,
        "runAsNonRoot": False,
        "privileged": False,
        "capabilities": {"add": ["NET_ADMIN"], "drop": ["ALL"]},
    },
    "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": True}],
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
    "imagePullPolicy": "IfNotPresent",
}

POD_SPEC: dict[str, Any] = {
    "containers": [CONTAINER],
    "initContainers": [{"name": "init", "image": "busybox", "restartPolicy": "Always"}],
    "volumes": [
        {"name": "data", "emptyDir": {"sizeLimit": "1Gi"}},
        {
            "name": "cfg",
            "configMap": {
                "name": "cfg",
                "defaultMode": 420,
                "optional": False,
                "items": [{"key": "a", "path": "a.txt", "mode": 0}],
            },
        },
        {"name": "sec", "secret": {"secretName": "s", "defaultMode": 256}},
        {"name": "pvc", "persistentVolumeClaim": {"claimName": "c", "readOnly": True}},
        {
            "name": "tok",
            "projected": {
                "sources": [
                    {
                        "serviceAccountToken": {
                            "path": "token",
                            "expirationSeconds": 3607,
                            "audience": "api",
                        }
                    }
                ]
            },
        },
    ],
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 0,
    "activeDeadlineSeconds": 600,
    "dnsPolicy": "ClusterFirst",
    "serviceAccountName": "default",
    "automountServiceAccountToken": False,
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "securityContext": {"fsGroup": 2000, "runAsUser": 1000, "supplementalGroups": [1, 2]},
    "schedulerName": "default-scheduler",
    "priority": 0,
    "enableServiceLinks": True,
    "tolerations": [
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        }
    ],
    "affinity": {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": {"app": "web"}},
                    },
                }
            ]
        }
    },
    "ephemeralContainers": [
        {
            "name": "debug",
            "image": "busybox",
            "targetContainerName": "main",
            "stdin": True,
            "tty": True,
        }
    ],
    "topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
    ],
}
TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": POD_SPEC}
SELECTOR = {"matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["1", "2"]}]}  # fmt: skip
CONDITION = {"type": "Ready", "status": "True", "lastTransitionTime": T, "reason": "Ok",
             "message": "fine"}  # fmt: skip
MANAGED = [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1", "time": T,
            "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}}}]  # fmt: skip

EXAMPLES: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Namespace",
     "metadata": {"name": "ns", "uid": "0b5f3c1e-1", "resourceVersion": "7", "generation": 1,
                  "creationTimestamp": T, "managedFields": MANAGED},
     "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}},
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
     "spec": {"podCIDR": "10.0.0.0/24", "podCIDRs": ["10.0.0.0/24"], "unschedulable": True,
              "taints": [{"key": "k", "value": "v", "effect": "NoSchedule", "timeAdded": T}]},
     "status": {"capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"},
                "allocatable": {"cpu": "1900m", "memory": "7Gi"},
                "conditions": [{**CONDITION, "lastHeartbeatTime": T}],
                "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                "nodeInfo": {"kubeletVersion": "v1.33.0", "osImage": "Debian",
                             "architecture": "amd64", "operatingSystem": "linux"},
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {**META, "deletionTimestamp": T,
                                                     "deletionGracePeriodSeconds": 0,
                                                     "ownerReferences": [
         {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1",
          "controller": True, "blockOwnerDeletion": True}], "finalizers": ["x/y"]},
     "spec": POD_SPEC,
     "status": {"phase": "Running", "podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.5"}],
                "startTime": T, "qosClass": "Burstable", "conditions": [CONDITION],
                "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0,
                                       "image": "web", "imageID": "sha256:1",
                                       "started": True,
                                       "state": {"running": {"startedAt": T}},
                                       "lastState": {"terminated": {"exitCode": -1,
                                                                    "finishedAt": T}}}]}},
    {"apiVersion": "v1", "kind": "Service", "metadata": META,
     "spec": {"type": "NodePort", "selector": {"app": "web"}, "clusterIP": "10.96.0.10",
              "clusterIPs": ["10.96.0.10"], "sessionAffinity": "None",
              "ports": [{"name": "http", "port": 80, "targetPort": 8080, "nodePort": 30080,
                         "protocol": "TCP"},
                        {"name": "named", "port": 81, "targetPort": "http"}],
              "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
              "internalTrafficPolicy": "Cluster"},
     "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}},
    {"apiVersion": "v1", "kind": "Endpoints", "metadata": META,
     "subsets": [{"addresses": [{"ip": "10.0.0.5", "nodeName": "n1",
                                 "targetRef": {"kind": "Pod", "name": "p", "namespace": "default"}}],
                  "ports": [{"port": 8080, "protocol": "TCP", "name": "http"}]}]},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": META,
     "data": {"a.txt": "hello\n", "empty": ""}, "binaryData": {"b": "AAEC/w=="},
     "immutable": False},
    {"apiVersion": "v1", "kind": "Secret", "metadata": META, "type": "Opaque",
     "data": {"password": "c2VjcmV0", "zero": ""}},
    {"apiVersion": "v1", "kind": "Event", "metadata": META,
     "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default", "uid": "u"},
     "reason": "Started", "message": "started", "type": "Normal", "count": 3,
     "firstTimestamp": T, "lastTimestamp": T, "eventTime": MICRO,
     "source": {"component": "kubelet", "host": "n1"},
     "series": {"count": 2, "lastObservedTime": MICRO}, "reportingComponent": "kubelet"},
    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": META,
     "spec": {"replicas": 0, "selector": SELECTOR, "template": TEMPLATE, "minReadySeconds": 5},
     "status": {"replicas": 0, "observedGeneration": 1}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": META,
     "spec": {"replicas": 3, "selector": SELECTOR, "template": TEMPLATE,
              "strategy": {"type": "RollingUpdate",
                           "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
              "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600, "paused": True},
     "status": {"replicas": 3, "readyReplicas": 3, "conditions": [
         {"type": "Available", "status": "True", "lastUpdateTime": T,
          "lastTransitionTime": T, "reason": "MinimumReplicasAvailable"}]}},
    {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": META,
     "spec": {"replicas": 2, "selector": SELECTOR, "template": TEMPLATE, "serviceName": "web",
              "podManagementPolicy": "Parallel",
              "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
              "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                  "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                  "resources": {"requests": {"storage": "1Gi"}}}}],
              "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain"}}},
    {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": META,
     "spec": {"selector": SELECTOR, "template": TEMPLATE,
              "updateStrategy": {"type": "RollingUpdate",
                                 "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}},
     "status": {"desiredNumberScheduled": 0, "numberReady": 0, "currentNumberScheduled": 0,
                "numberMisscheduled": 0}},
    {"apiVersion": "batch/v1", "kind": "Job", "metadata": META,
     "spec": {"parallelism": 2, "completions": 4, "backoffLimit": 0, "suspend": False,
              "ttlSecondsAfterFinished": 0, "completionMode": "Indexed",
              "selector": SELECTOR, "manualSelector": True, "template": TEMPLATE,
              "podFailurePolicy": {"rules": [{"action": "Ignore", "onExitCodes": {
                  "operator": "In", "values": [1, 2]}}]}},
     "status": {"startTime": T, "active": 1, "succeeded": 2, "ready": 0,
                "uncountedTerminatedPods": {}}},
    {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": META,
     "spec": {"schedule": "*/5 * * * *", "timeZone": "Etc/UTC",
              "concurrencyPolicy": "Forbid", "suspend": False,
              "startingDeadlineSeconds": 0, "successfulJobsHistoryLimit": 3,
              "jobTemplate": {"metadata": {"labels": {"a": "b"}}, "spec": {"template": TEMPLATE}}},
     "status": {"lastScheduleTime": T, "active": [{"kind": "Job", "name": "j"}]}},
    {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": META,
     "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
              "minReplicas": 1, "maxReplicas": 5,
              "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                  "type": "Utilization", "averageUtilization": 80}}},
                  {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {
                      "type": "AverageValue", "averageValue": "1500m"}}}],
              "behavior": {"scaleDown": {"stabilizationWindowSeconds": 0, "policies": [
                  {"type": "Percent", "value": 100, "periodSeconds": 15}]}}},
     "status": {"currentReplicas": 1, "desiredReplicas": 2, "lastScaleTime": T}},
    {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": META,
     "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40, "acquireTime": MICRO,
              "renewTime": MICRO, "leaseTransitions": 0}},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "hi"},
     "value": -5, "globalDefault": True, "description": "d",
     "preemptionPolicy": "PreemptLowerPriority"},
    {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
     "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
              "hostPath": {"path": "/srv/pv", "type": ""}, "storageClassName": "local",
              "persistentVolumeReclaimPolicy": "Retain",
              "claimRef": {"namespace": "default", "name": "c"},
              "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                  {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}}},
     "status": {"phase": "Bound", "lastPhaseTransitionTime": T}},
    {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": META,
     "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
              "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "local"},
     "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}},
    {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
     "provisioner": "skiff.dev/local", "reclaimPolicy": "Delete",
     "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": False,
     "parameters": {"path": "/srv"}},
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": META,
     "secrets": [{"name": "s"}], "imagePullSecrets": [{"name": "reg"}],
     "automountServiceAccountToken": False},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": META,
     "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"],
                "resourceNames": ["p"]}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
     "metadata": {"name": "cr"},
     "rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}],
     "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "true"}}]}},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": META,
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
     "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"},
                  {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
     "metadata": {"name": "crb"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cr"},
     "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
                   "name": "system:authenticated"}]},
    {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "metadata": {},
     "spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}},
     "status": {"allowed": False, "denied": True}},
    {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "metadata": {},
     "spec": {"token": "t", "audiences": ["api"]},
     "status": {"authenticated": True, "user": {"username": "alice", "groups": ["g"],
                                                 "extra": {"k": ["v"]}}}},
    {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "metadata": {},
     "spec": {"user": "alice", "groups": ["dev"], "extra": {"scopes": ["a", "b"]},
              "resourceAttributes": {"verb": "get", "resource": "pods"}},
     "status": {"allowed": True, "reason": "rbac"}},
    {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": META,
     "spec": {"audiences": ["api"], "expirationSeconds": 3600,
              "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "u"}},
     "status": {"token": "abc", "expirationTimestamp": T}},
    {"apiVersion": "v1", "kind": "PodTemplate", "metadata": META, "template": TEMPLATE},
    {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": META,
     "spec": {"replicas": 4}, "status": {"replicas": 2, "selector": "app=web"}},
    {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": META,
     "deleteOptions": {"gracePeriodSeconds": 0, "dryRun": ["All"],
                       "preconditions": {"uid": "u"}}},
]  # fmt: skip
