"""The batch scheduler's CPU per pod under the end-to-end run's event stream, in process.

`python -m bench.volcano` end to end is noisy: the control plane shares one
GIL between the API server, the controllers and this scheduler, and the
machine with other benches. This replays what its batch scheduler sees,
without an API server: 500 nodes, 1,000 Jobs of 10 tasks arriving 4 per
session (as they do end to end, where a session runs every 0.2 s or more),
each pod's events as its informer delivers them (created pending; bound: our
bind coming back; Running: the agent's status write) and the PodGroup status
echoes, every object decoded afresh and shaped as the API server returns it
(managedFields, the service account's projected volume, default
tolerations). Figures: the session thread's CPU and the informer handlers'
CPU per pod, with the cyclic garbage collector on (as in the control plane)
and off (the code's own cost).

    .venv/bin/python -m bench.volcano_events [--nodes 500] [--jobs 1000] [--tasks 10]
                                             [--per-session 4]

Prints a table; the last line is one JSON object of figure -> number.
Volcano publishes no comparable figure.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from typing import Any

from bench.stats import report
from controlplane.api import volcano
from controlplane.scheduler.batch import conf as batch_conf
from controlplane.scheduler.batch.scheduler import BatchScheduler
from machinery.clock import RealClock

Obj = dict[str, Any]
STAMP = "2026-01-01T00:00:00Z"


def node(i: int) -> str:
    name = f"hollow-{i:05d}"
    return json.dumps({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": f"node-{i}", "creationTimestamp": STAMP, "labels": {
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64"}},
        "spec": {},
        "status": {
            "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"},
            "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "AgentReady",
                            "lastHeartbeatTime": STAMP, "lastTransitionTime": STAMP}],
            "addresses": [{"type": "InternalIP", "address": f"10.128.{i // 250}.{i % 250}"}],
        },
    })  # fmt: skip


def group(job: str, tasks: int) -> Obj:
    return {
        "apiVersion": volcano.SCHEDULING_API, "kind": "PodGroup",
        "metadata": {"name": f"{job}-pg", "namespace": "default", "uid": f"{job}-pg-uid",
                     "creationTimestamp": STAMP, "annotations": {"volcano.sh/job-name": job},
                     "ownerReferences": [{"apiVersion": volcano.BATCH_API, "kind": "Job",
                                          "name": job, "uid": f"{job}-uid", "controller": True}]},
        "spec": {"minMember": tasks, "minTaskMember": {"t": tasks}, "queue": "default",
                 "minResources": {"cpu": f"{tasks}", "memory": f"{tasks}Gi"}},
        "status": {"phase": "Pending"},
    }  # fmt: skip


def pod(job: str, index: int) -> Obj:
    """A task pod as the Volcano Job controller creates it and the API server stores it."""
    labels = {"volcano.sh/job-name": job, "volcano.sh/job-namespace": "default",
              "volcano.sh/queue-name": "default", "volcano.sh/task-spec": "t",
              "volcano.sh/task-index": str(index)}  # fmt: skip
    fields: Obj = {f"f:{k}": {} for k in labels}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": f"{job}-t-{index}", "namespace": "default", "uid": f"{job}-{index}-uid",
            "creationTimestamp": STAMP, "generation": 1, "labels": labels,
            "annotations": {volcano.GROUP_NAME_ANNOTATION: f"{job}-pg", "volcano.sh/job-name": job,
                            volcano.TASK_SPEC: "t", "volcano.sh/task-index": str(index),
                            "volcano.sh/job-version": "0"},
            "ownerReferences": [{"apiVersion": volcano.BATCH_API, "kind": "Job", "name": job,
                                 "uid": f"{job}-uid", "controller": True,
                                 "blockOwnerDeletion": True}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                               "apiVersion": "v1", "time": STAMP, "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:metadata": {"f:labels": fields},
                                            "f:spec": {"f:containers": {}, "f:volumes": {}}}}],
        },
        "spec": {
            "restartPolicy": "Never", "schedulerName": volcano.SCHEDULER_NAME, "priority": 0,
            "containers": [{
                "name": "c", "image": "registry.k8s.io/pause:3.9",
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "volumeMounts": [{"name": "kube-api-access", "readOnly": True,
                                  "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
            }],
            "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30,
            "securityContext": {}, "enableServiceLinks": True, "serviceAccountName": "default",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
            ],
            "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "optional": True,
                               "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            ]}}],
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }  # fmt: skip


def running(bound: Obj) -> Obj:
    out: Obj = json.loads(json.dumps(bound))
    out["status"] = {
        "phase": "Running", "qosClass": "Burstable", "hostIP": "10.128.0.1",
        "podIP": "100.64.0.2", "podIPs": [{"ip": "100.64.0.2"}], "startTime": STAMP,
        "conditions": [{"type": t, "status": "True", "lastTransitionTime": STAMP}
                       for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
        "containerStatuses": [{"name": "c", "image": "registry.k8s.io/pause:3.9", "ready": True,
                               "started": True, "restartCount": 0,
                               "state": {"running": {"startedAt": STAMP}}}],
    }  # fmt: skip
    return out


class Writer:
    """Binds and status writes recorded, to come back as events at the next round."""

    def __init__(self) -> None:
        self.binds: list[tuple[Obj, str]] = []
        self.statuses: list[tuple[str, Obj, Obj]] = []

    def bind_many(
        self, items: list[tuple[Obj, str, dict[str, str] | None]]
    ) -> list[Exception | None]:
        self.binds.extend((p, n) for p, n, _ in items)
        return [None] * len(items)

    def evict(self, pod: Obj, grace_seconds: int) -> None:
        pass

    def write_status(self, kind: str, obj: Obj, status: Obj) -> None:
        self.statuses.append((kind, obj, status))

    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        pass


def replay(nodes: int, jobs: int, tasks: int, per_session: int) -> tuple[float, float, int]:
    """Session and handler CPU seconds, and sessions run, to bind every pod."""
    w = Writer()
    s = BatchScheduler(batch_conf.load(batch_conf.DEFAULT_CONF), w, clock=RealClock())
    s.cache.on_queue({"metadata": {"name": "default"}, "spec": {"weight": 1, "reclaimable": True},
                "status": {"state": "Open"}})  # fmt: skip
    for i in range(nodes):
        s.cache.on_node(json.loads(node(i)))
    handlers = session = 0.0
    created = bound = sessions = 0
    to_confirm: list[str] = []
    to_run: list[str] = []
    while bound < jobs * tasks and sessions < 20 * jobs:
        events: list[tuple[Any, str]] = []  # (handler, JSON text): decoded like the informer
        for _ in range(per_session):
            if created < jobs:
                job = f"b{created:04d}"
                events.append((s.cache.on_pod_group, json.dumps(group(job, tasks))))
                events += [(s.cache.on_pod, json.dumps(pod(job, t))) for t in range(tasks)]
                created += 1
        events += [(s.cache.on_pod, text) for text in to_run]
        to_run = [json.dumps(running(json.loads(text))) for text in to_confirm]
        events += [(s.cache.on_pod, text) for text in to_confirm]
        for kind, obj, status in w.statuses:
            handler = s.cache.on_pod_group if kind == "PodGroup" else s.cache.on_queue
            events.append((handler, json.dumps({**obj, "status": {**obj["status"], **status}})))
        w.statuses = []
        for handler, text in events:
            obj = json.loads(text)
            t0 = time.thread_time()
            handler(obj)
            handlers += time.thread_time() - t0
        t0 = time.thread_time()
        s.run_session()
        session += time.thread_time() - t0
        sessions += 1
        to_confirm = []
        for p, n in w.binds:
            to_confirm.append(json.dumps({**p, "spec": {**p["spec"], "nodeName": n}}))
        bound += len(w.binds)
        w.binds = []
    s.close()
    return session, handlers, sessions


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.volcano_events")
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--jobs", type=int, default=1000)
    p.add_argument("--tasks", type=int, default=10)
    p.add_argument("--per-session", type=int, default=4)
    args = p.parse_args(argv)
    pods = args.jobs * args.tasks
    figures: dict[str, float] = {}
    for label, collect in (("gc", True), ("nogc", False)):
        if not collect:
            gc.disable()
        try:
            session, handlers, sessions = replay(
                args.nodes, args.jobs, args.tasks, args.per_session
            )
        finally:
            gc.enable()
        figures[f"session_cpu_ms_per_pod_{label}"] = round(session * 1000 / pods, 3)
        figures[f"handlers_cpu_ms_per_pod_{label}"] = round(handlers * 1000 / pods, 3)
        figures["sessions"] = sessions
    print(f"{args.nodes} nodes, {args.jobs} jobs x {args.tasks} tasks, {args.per_session} jobs "
          f"per session ({figures['sessions']:.0f} sessions):")  # fmt: skip
    report(figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
