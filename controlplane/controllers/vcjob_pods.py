"""What a Volcano Job owns, built as plain objects: its PodGroup, its task pods,
the claims of its `spec.volumes`, and what its plugins add (svc: a headless
Service and a hosts ConfigMap; env: the task index; ssh: a key pair in a
Secret). Pure: no client, no clock.

Job volumes are Volcano's: a volume with `volumeClaim` (a claim spec) gets a
claim `<job>-volume-<suffix>` owned by the job, one with `volumeClaimName`
uses that existing claim; every task pod mounts each at its `mountPath`.
Volcano draws the suffix at random and writes it back into the job; ours is
derived from the job's uid and the volume's index, so every sync names the
same claim without a write to the job.

Names are Volcano's: pods `<job>-<task>-<index>`, the PodGroup
`<job>-<job uid>`, the Service `<job>`, ConfigMap `<job>-svc`, Secret
`<job>-ssh`. Pods carry Volcano's labels and annotations (job name, task,
index, queue, job version, and `scheduling.k8s.io/group-name`).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from typing import Any

from controlplane.api import volcano
from controlplane.controllers import podutil
from controlplane.scheduler import resources

Object = dict[str, Any]
SVC_MOUNT = "/etc/volcano"
SSH_MOUNT = "/root/.ssh"


def group_name(job: Mapping[str, Any]) -> str:
    return f"{podutil.name_of(job)}-{podutil.uid_of(job)}"


def pod_name(job: Mapping[str, Any], task: str, index: int) -> str:
    return f"{podutil.name_of(job)}-{task}-{index}"


def tasks(job: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [t for t in podutil.spec(job).get("tasks") or [] if isinstance(t, Mapping)]


def _env_name(task: str) -> str:
    return task.upper().replace("-", "_")


def pod_group(job: Mapping[str, Any]) -> Object:
    """The job's PodGroup: minMember, per-task minimums, queue, priority, the
    resources of the first minAvailable tasks (what enqueue reserves), and
    the job's annotations and labels."""
    spec = podutil.spec(job)
    min_available = int(spec.get("minAvailable") or 0)
    need: dict[str, int] = {}
    left = min_available
    for t in tasks(job):
        template = t.get("template") or {}
        per_pod = resources.pod_requests({"spec": template.get("spec") or {}})
        n = min(int(t.get("replicas") or 0), left)
        for k, v in per_pod.items():
            if k in (resources.CPU, resources.MEMORY):
                need[k] = need.get(k, 0) + v * n
        left -= n
    min_resources = {k: (f"{v}m" if k == resources.CPU else str(v)) for k, v in need.items()}
    pg_spec: Object = {
        "minMember": min_available,
        "minTaskMember": {
            str(t["name"]): int(t.get("minAvailable", t.get("replicas") or 0)) for t in tasks(job)
        },
        "queue": spec.get("queue") or volcano.DEFAULT_QUEUE,
        "minResources": min_resources,
    }
    if spec.get("priorityClassName"):
        pg_spec["priorityClassName"] = spec["priorityClassName"]
    meta: Object = {
        "name": group_name(job),
        "namespace": podutil.namespace_of(job),
        "ownerReferences": [podutil.owner_ref(job)],
        # The Job's own (sla-waiting-time, say), as Volcano's controller copies them.
        "annotations": {**podutil.annotations_of(job), volcano.JOB_NAME: podutil.name_of(job)},
    }
    if podutil.labels_of(job):
        meta["labels"] = dict(podutil.labels_of(job))
    return {"apiVersion": volcano.SCHEDULING_API, "kind": "PodGroup", "metadata": meta,
            "spec": pg_spec}  # fmt: skip


def volumes(job: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [v for v in podutil.spec(job).get("volumes") or [] if isinstance(v, dict)]


def claim_name(job: Mapping[str, Any], index: int, volume: Mapping[str, Any]) -> str:
    """The claim a job volume mounts: the one it names, or the one made for it."""
    given = volume.get("volumeClaimName")
    if given:
        return str(given)
    digest = hashlib.sha256(f"{podutil.uid_of(job)}/{index}".encode()).hexdigest()
    return f"{podutil.name_of(job)}-volume-{digest[:12]}"


def job_claim(job: Mapping[str, Any], index: int, volume: Mapping[str, Any]) -> Object | None:
    """The claim to create for a job volume (None when it names an existing claim)."""
    spec = volume.get("volumeClaim")
    if volume.get("volumeClaimName") or not isinstance(spec, dict):
        return None
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": claim_name(job, index, volume),
            "namespace": podutil.namespace_of(job),
            "ownerReferences": [podutil.owner_ref(job)],
        },
        "spec": copy.deepcopy(spec),
    }


def _mount_claims(job: Mapping[str, Any], pod_spec: Object) -> None:
    """Each job volume's claim as a pod volume, mounted in every container."""
    by_claim: dict[str, str] = {}
    for i, vol in enumerate(volumes(job)):
        claim = claim_name(job, i, vol)
        name = by_claim.setdefault(claim, f"volcano-volume-{i}")
        if name == f"volcano-volume-{i}":
            pod_spec.setdefault("volumes", []).append(
                {"name": name, "persistentVolumeClaim": {"claimName": claim}}
            )
        for c in _containers(pod_spec):
            c.setdefault("volumeMounts", []).append(
                {"name": name, "mountPath": str(vol.get("mountPath"))}
            )


def task_pod(job: Mapping[str, Any], task: Mapping[str, Any], index: int, version: int) -> Object:
    spec = podutil.spec(job)
    name = podutil.name_of(job)
    ns = podutil.namespace_of(job)
    tname = str(task["name"])
    template = task.get("template") or {}
    tmeta = template.get("metadata") or {}
    queue = spec.get("queue") or volcano.DEFAULT_QUEUE
    labels = {
        **(tmeta.get("labels") or {}),
        volcano.JOB_NAME: name,
        volcano.JOB_NAMESPACE: ns,
        volcano.QUEUE_NAME: queue,
        volcano.TASK_SPEC: tname,
        volcano.TASK_INDEX: str(index),
    }
    annotations = {
        **(tmeta.get("annotations") or {}),
        volcano.GROUP_NAME_ANNOTATION: group_name(job),
        volcano.JOB_NAME: name,
        volcano.TASK_SPEC: tname,
        volcano.TASK_INDEX: str(index),
        volcano.JOB_VERSION: str(version),
        volcano.QUEUE_NAME: queue,
    }
    pod_spec: Object = copy.deepcopy(template.get("spec") or {})
    if not pod_spec.get("schedulerName"):
        pod_spec["schedulerName"] = spec.get("schedulerName") or volcano.SCHEDULER_NAME
    if spec.get("priorityClassName") and not pod_spec.get("priorityClassName"):
        pod_spec["priorityClassName"] = spec["priorityClassName"]
    _mount_claims(job, pod_spec)
    plugins = spec.get("plugins") or {}
    if "env" in plugins:
        _env(pod_spec, [("VK_TASK_INDEX", str(index)), ("VC_TASK_INDEX", str(index))])
    if "svc" in plugins:
        pod_spec["hostname"] = pod_name(job, tname, index)
        pod_spec["subdomain"] = name
        env = []
        for t in tasks(job):
            hosts = ",".join(
                f"{pod_name(job, str(t['name']), i)}.{name}"
                for i in range(int(t.get("replicas") or 0))
            )
            env += [
                (f"VC_{_env_name(str(t['name']))}_HOSTS", hosts),
                (f"VC_{_env_name(str(t['name']))}_NUM", str(t.get("replicas") or 0)),
            ]
        _env(pod_spec, env)
        _mount(pod_spec, "volcano-svc", {"configMap": {"name": f"{name}-svc"}}, SVC_MOUNT)
    if "ssh" in plugins:
        _mount(
            pod_spec,
            "volcano-ssh",
            {"secret": {"secretName": f"{name}-ssh", "defaultMode": 0o600}},
            SSH_MOUNT,
        )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(job, tname, index),
            "namespace": ns,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [podutil.owner_ref(job)],
        },
        "spec": pod_spec,
    }


def _containers(pod_spec: Object) -> list[Object]:
    return [
        c
        for c in [*(pod_spec.get("containers") or []), *(pod_spec.get("initContainers") or [])]
        if isinstance(c, dict)
    ]


def _env(pod_spec: Object, pairs: list[tuple[str, str]]) -> None:
    for c in _containers(pod_spec):
        env = c.setdefault("env", [])
        have = {e.get("name") for e in env if isinstance(e, dict)}
        env.extend({"name": k, "value": v} for k, v in pairs if k not in have)


def _mount(pod_spec: Object, volume: str, source: Object, path: str) -> None:
    vols = pod_spec.setdefault("volumes", [])
    if not any(v.get("name") == volume for v in vols if isinstance(v, dict)):
        vols.append({"name": volume, **source})
    for c in _containers(pod_spec):
        mounts = c.setdefault("volumeMounts", [])
        if not any(m.get("name") == volume for m in mounts if isinstance(m, dict)):
            mounts.append({"name": volume, "mountPath": path})


def svc_objects(job: Mapping[str, Any]) -> list[tuple[str, Object]]:
    """The svc plugin: a headless Service selecting the job's pods, and the
    hosts of every task (`<task>.host`, one name per line) in a ConfigMap."""
    name = podutil.name_of(job)
    ns = podutil.namespace_of(job)
    owner = [podutil.owner_ref(job)]
    data = {}
    for t in tasks(job):
        tname = str(t["name"])
        data[f"{tname}.host"] = "\n".join(
            f"{pod_name(job, tname, i)}.{name}" for i in range(int(t.get("replicas") or 0))
        )
        data[f"{_env_name(tname)}_NUM"] = str(t.get("replicas") or 0)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns, "ownerReferences": owner},
        "spec": {
            "clusterIP": "None",
            "selector": {volcano.JOB_NAME: name, volcano.JOB_NAMESPACE: ns},
            "ports": [{"name": "placeholder-volcano", "port": 1, "protocol": "TCP"}],
        },
    }
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-svc", "namespace": ns, "ownerReferences": owner},
        "data": data,
    }
    return [("Service", service), ("ConfigMap", config)]


def ssh_secret(job: Mapping[str, Any]) -> Object:
    """The ssh plugin: one key pair for the whole job, trusted by every pod."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
    )
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"{podutil.name_of(job)}-ssh",
            "namespace": podutil.namespace_of(job),
            "ownerReferences": [podutil.owner_ref(job)],
        },
        "type": "Opaque",
        "stringData": {
            "id_ed25519": private,
            "id_ed25519.pub": public + "\n",
            "authorized_keys": public + "\n",
            "config": "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
            "IdentityFile /root/.ssh/id_ed25519\n",
        },
    }
