"""Volcano's Job controller: a PodGroup and task pods per Job, its state machine and policies.

A Job (batch.volcano.sh/v1alpha1) gets its PodGroup (gang: minAvailable,
per-task minimums, queue, the Job's annotations and labels), what its
plugins need (svc, ssh) and one pod per task replica,
`<job>-<task>-<index>` (vcjob_pods.py builds them). Pods are claimed
through the shared ControllerRefManager.

Each sync runs one action on the job's state, as Volcano's controller: the
action of the oldest Command targeting the Job (vcctl or skiffctl job
suspend/resume: AbortJob/ResumeJob; also RestartJob, CompleteJob,
TerminateJob), taken oldest first and deleted once the state it led to is
stored; else the first event of this sync a lifecycle policy maps to an
action (vcjob_policy.py: PodFailed with its exit code, PodEvicted,
TaskFailed, TaskCompleted, Unknown when the PodGroup turns Unknown); else a
plain sync. The states and what each action does in them are
vcjob_state.py's (Volcano's controllers/job/state). Every action but a
sync is recorded as a Normal `ExecuteAction` Event on the Job ("Start to
execute action RestartJob "), a Command as `CommandIssued`.
ttlSecondsAfterFinished deletes a finished Job.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from controlplane.api import volcano
from controlplane.client import errors
from controlplane.client.interface import BatchCreator, DeleteOptions, Object
from controlplane.client.store import object_key
from controlplane.controllers import podutil, vcjob_pods, vcjob_state
from controlplane.controllers.base import (
    CLAIMABLE,
    CONTROLLER_UID,
    Controller,
    ControllerContext,
)
from controlplane.controllers.refmanager import ControllerRefManager
from controlplane.controllers.vccommands import CommandInbox
from controlplane.controllers.vcjob_policy import (
    PodEvent,
    action_for,
    exit_code,
    task_completed,
    task_failed,
    task_of,
)
from machinery import rfc3339

COMMAND_TARGET = "volcano/command-target"  # Command index: "<ns>/<job>" it targets
STATUS_DELAY = 0.5  # seconds a pod's status change may wait to reach its job
FINISHED = volcano.JOB_FINISHED


def _is_volcano_job_ref(ref: Mapping[str, Any]) -> bool:
    return ref.get("kind") == "Job" and str(ref.get("apiVersion", "")).startswith(
        "batch.volcano.sh/"
    )


def _restarted(pod: Mapping[str, Any]) -> bool:
    """Some container of the pod restarted (what can make its task TaskFailed)."""
    st = podutil.status(pod)
    return any(
        isinstance(c, Mapping) and int(c.get("restartCount") or 0) > 0
        for key in ("initContainerStatuses", "containerStatuses")
        for c in st.get(key) or ()
    )


def _command_target(cmd: Object) -> list[str]:
    found = volcano.command_target(cmd)
    if found is None or found[0] != "Job":
        return []
    return [f"{podutil.namespace_of(cmd)}/{found[1]}"]


class VolcanoJobController(Controller):
    name = "volcano-job"
    default_workers = 10

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.jobs = self.watch_primary(volcano.JOB_KEY)
        self.pods = self.watch("Pod", CLAIMABLE)
        self.groups = self.watch("PodGroup")
        self.claims = self.watch("PersistentVolumeClaim")
        self.commands = CommandInbox(self, COMMAND_TARGET, _command_target)
        self.refs = ControllerRefManager(ctx.client, volcano.JOB_KEY, "Pod")
        # Asked once: a runtime Protocol check costs tens of microseconds.
        self.batch: BatchCreator | None = (
            ctx.client if isinstance(ctx.client, BatchCreator) else None
        )
        self._lock = threading.Lock()
        self.killed: set[str] = set()  # uids of pods this controller deleted
        self.events: dict[str, list[PodEvent]] = {}  # job key -> events not yet acted on
        self.fired: set[tuple[str, int, str]] = set()  # (job uid, version, task) TaskCompleted
        self.pods.add_event_handler(
            on_add=self._pod_changed,
            on_update=lambda old, new: self._pod_changed(new, old),
            on_delete=self._pod_deleted,
        )
        self.groups.add_event_handler(
            on_add=None, on_update=self._group_updated, on_delete=self._group_deleted
        )

    # ---- handlers -----------------------------------------------------------------

    def _job_key(self, pod: Mapping[str, Any]) -> str | None:
        ref = podutil.controller_ref(pod)
        if ref is None or not _is_volcano_job_ref(ref):
            return None
        return f"{podutil.namespace_of(pod)}/{ref.get('name')}"

    def _event(self, key: str, event: PodEvent) -> None:
        with self._lock:
            self.events.setdefault(key, []).append(event)
        self.enqueue_key(key)

    def _siblings(self, pod: Mapping[str, Any]) -> list[Object]:
        ref = podutil.controller_ref(pod) or {}
        return self.pods.store.by_index(CONTROLLER_UID, str(ref.get("uid") or ""))

    def _pod_changed(self, new: Object, old: Object | None = None) -> None:
        key = self._job_key(new)
        if key is None:
            return
        phase = podutil.status(new).get("phase")
        old_phase = podutil.status(old).get("phase") if old is not None else None
        task, name = task_of(new), podutil.name_of(new)
        if phase == "Failed" and old_phase != "Failed":
            self._event(key, PodEvent("PodFailed", task, name, exit_code(new)))
        elif phase in ("Running", "Pending") and old is not None and _restarted(new):
            job = self.jobs.store.get_by_key(key)
            if job is not None and task_failed(job, task, self._siblings(new)):
                self._event(key, PodEvent("TaskFailed", task, name))
        if (
            old is not None
            and podutil.is_deleting(new)
            and not podutil.is_deleting(old)
            and phase not in ("Succeeded", "Failed")
        ):
            with self._lock:
                ours = podutil.uid_of(new) in self.killed
            if not ours:
                self._event(key, PodEvent("PodEvicted", task, name))
        # Other changes (a pod starting) only move counts: fold a gang's worth
        # of them into one sync and one status write.
        self.enqueue_after(key, STATUS_DELAY)

    def _pod_deleted(self, pod: Object) -> None:
        key = self._job_key(pod)
        if key is None:
            return
        with self._lock:
            ours = podutil.uid_of(pod) in self.killed
            self.killed.discard(podutil.uid_of(pod))
        phase = podutil.status(pod).get("phase")
        if not ours and not podutil.is_deleting(pod) and phase not in ("Succeeded", "Failed"):
            self._event(key, PodEvent("PodEvicted", task_of(pod), podutil.name_of(pod)))
        self.enqueue_key(key)

    def _group_updated(self, old: Object, new: Object) -> None:
        """The PodGroup turning Unknown (the batch scheduler's: pods run but the
        gang cannot be placed whole) is the job's Unknown event."""
        name = podutil.annotations_of(new).get(volcano.JOB_NAME)
        phase = podutil.status(new).get("phase")
        if name and phase == "Unknown" and podutil.status(old).get("phase") != "Unknown":
            self._event(f"{podutil.namespace_of(new)}/{name}", PodEvent("Unknown", ""))

    def _command(self, key: str, job: Object) -> Object | None:
        """The oldest Command for this Job not yet consumed; ones for an
        earlier Job of the same name are deleted unread."""
        for cmd in self.commands.pending(key):
            uid = (cmd.get("target") or {}).get("uid")
            if not uid or uid == podutil.uid_of(job):
                return cmd
            self.commands.consume(cmd)
        return None

    def _group_deleted(self, group: Object) -> None:
        name = podutil.annotations_of(group).get(volcano.JOB_NAME)
        if name:
            self.enqueue_key(f"{podutil.namespace_of(group)}/{name}")

    # ---- sync ---------------------------------------------------------------------

    def sync(self, key: str) -> float | None:
        job = self.jobs.store.get_by_key(key)
        with self._lock:
            events = self.events.pop(key, [])
        if job is None or podutil.is_deleting(job):
            return None
        status = dict(podutil.status(job))
        before = str((status.get("state") or {}).get("phase") or "Pending")
        version = int(status.get("version") or 0)
        retries = int(status.get("retryCount") or 0)
        uid = podutil.uid_of(job)
        pods = self.refs.claim(
            job,
            self.pods.store.by_index(CONTROLLER_UID, uid),
            (),  # a Volcano Job adopts nothing: its pods are its own by name
            lambda pod: podutil.labels_of(pod).get(volcano.JOB_NAME) == podutil.name_of(job),
        )
        reason, target = "", ""
        command = self._command(key, job)
        action = ""
        if command is not None:
            action = str(command.get("action") or "")
            reason = str(command.get("reason") or f"command {action}")
        elif before not in FINISHED:
            action, target, reason = self._policy_action(job, events, pods, version)
        if action:
            self.recorder.event(
                job, "Normal", "ExecuteAction", f"Start to execute action {action} "
            )
        step = vcjob_state.act(job, before, action, target, pods, version, retries)
        self._kill(list(step.kill))
        phase = step.phase
        counts = vcjob_state.counts(pods, step.kill)
        if step.settle:
            phase = vcjob_state.settle(job, phase, counts, step.retries, pods, step.kill)
        if phase == "Failed" and before == "Restarting" and not reason:
            reason = f"retried {step.retries} times, maxRetry {vcjob_state.max_retry(job)}"
        restarted = phase == "Pending" and before == "Restarting"
        if phase in ("Pending", "Running") and not restarted:
            # (Not in the sync that ends a restart: the new pods come once the new
            # version is stored, or a sync reading the old state would kill them.)
            self._ensure_plugins(job)
            waiting = self._ensure_volumes(job)
            if waiting:  # as Volcano: the job stays Pending until its claims exist
                self.enqueue_after(key, 1.0)
            else:
                pods = self._create_missing(job, pods, step.version)
                counts = vcjob_state.counts(pods, step.kill)
        live = [p for p in pods if p not in step.kill]
        if self._write_status(job, phase, reason, step.version, step.retries, counts, live):
            if command is not None:
                self.commands.consume(command)  # only once the state it led to is stored
                self.recorder.event(job, "Normal", "CommandIssued",
                                    f"Start to execute command {action}, and clean it up "
                                    "to make sure executed not more than once.")  # fmt: skip
                self.enqueue_key(key)  # the next Command, if any
            if phase != before:
                self.enqueue_key(key)  # the next state may settle at once
        else:
            with self._lock:  # not stored: this sync's events are seen again
                self.events.setdefault(key, [])[:0] = events
        return self._ttl(job, phase)

    def _policy_action(
        self, job: Object, events: list[PodEvent], pods: list[Object], version: int
    ) -> tuple[str, str, str]:
        """(action, target, reason) of the first event of this sync a policy maps to."""
        uid = podutil.uid_of(job)
        for t in vcjob_pods.tasks(job):
            tname = str(t.get("name"))
            if task_completed(job, tname, pods) and (uid, version, tname) not in self.fired:
                self.fired.add((uid, version, tname))
                events = [*events, PodEvent("TaskCompleted", tname)]
        for ev in events:
            action, target = action_for(job, ev)
            if action:
                return action, target, f"{ev.event} of {ev.pod or ev.task or 'the job'}"
        return "", "", ""

    def _kill(self, pods: list[Object]) -> None:
        for pod in pods:
            if podutil.is_deleting(pod):
                continue
            with self._lock:
                self.killed.add(podutil.uid_of(pod))
            try:
                self.client.delete(
                    "Pod", podutil.name_of(pod), podutil.namespace_of(pod), DeleteOptions()
                )
            except errors.NotFound:
                pass

    def _create(self, kind: str, obj: Object) -> None:
        try:
            self.client.create(kind, obj, podutil.namespace_of(obj))
        except errors.AlreadyExists:
            pass

    def _ensure_plugins(self, job: Object) -> None:
        plugins = podutil.spec(job).get("plugins") or {}
        status = podutil.status(job).get("controlledResources") or {}
        if "svc" in plugins and "plugin-svc" not in status:
            for kind, obj in vcjob_pods.svc_objects(job):
                self._create(kind, obj)
        if "ssh" in plugins and "plugin-ssh" not in status:
            self._create("Secret", vcjob_pods.ssh_secret(job))

    def _ensure_volumes(self, job: Object) -> str:
        """Create the claims of the job's volumes; the first named claim missing, if any."""
        ns = podutil.namespace_of(job)
        for i, vol in enumerate(vcjob_pods.volumes(job)):
            name = vcjob_pods.claim_name(job, i, vol)
            if self.claims.store.get(name, ns) is not None:
                continue
            claim = vcjob_pods.job_claim(job, i, vol)
            if claim is None:
                return name
            self._create("PersistentVolumeClaim", claim)
        return ""

    def _create_missing(self, job: Object, pods: list[Object], version: int) -> list[Object]:
        have = {podutil.name_of(p) for p in pods}
        ns = podutil.namespace_of(job)
        missing = [
            vcjob_pods.task_pod(job, t, i, version)
            for t in vcjob_pods.tasks(job)
            for i in range(int(t.get("replicas") or 0))
            if vcjob_pods.pod_name(job, str(t["name"]), i) not in have
        ]
        out = list(pods)
        group = None
        if self.groups.store.get(vcjob_pods.group_name(job), ns) is None:
            group = vcjob_pods.pod_group(job)
        if self.batch is not None and len(missing) + (group is not None) > 1:
            # The PodGroup and a gang's pods in one call: they go together anyway.
            # Only counted here (phase, task annotation): the pods sent serve,
            # so the server sends none back.
            items = [("PodGroup", group, ns)] if group is not None else []
            items += [("Pod", pod, ns) for pod in missing]
            results = self.batch.create_many(items, omit_objects=True)
            for (kind, sent, _), result in zip(items, results, strict=True):
                if isinstance(result, int):
                    if kind == "Pod":
                        out.append(sent)
                elif not isinstance(result, errors.AlreadyExists):
                    self.enqueue_after(object_key(job), 1.0)
            return out
        if group is not None:
            self._create("PodGroup", group)
        for pod in missing:
            try:
                out.append(self.client.create("Pod", pod, ns))
            except errors.AlreadyExists:
                pass
        return out

    def _write_status(
        self, job: Object, phase: str, reason: str, version: int, retries: int,
        counts: dict[str, int], pods: list[Object],
    ) -> bool:  # fmt: skip
        """Store the status if it changed; False when the write failed (retried)."""
        old = dict(podutil.status(job))
        old_state = old.get("state") or {}
        per_task: dict[str, dict[str, dict[str, int]]] = {}
        for p in pods:
            t = podutil.annotations_of(p).get(volcano.TASK_SPEC, "")
            ph = str(podutil.status(p).get("phase") or "Pending")
            per_task.setdefault(t, {"phase": {}})["phase"][ph] = (
                per_task.get(t, {"phase": {}})["phase"].get(ph, 0) + 1
            )
        plugins = podutil.spec(job).get("plugins") or {}
        status: Object = {
            "state": {
                "phase": phase,
                "reason": reason
                if phase != old_state.get("phase")
                else old_state.get("reason", ""),
                "message": "",
                "lastTransitionTime": old_state.get("lastTransitionTime")
                if phase == old_state.get("phase")
                else rfc3339.format_time(self.clock.now()),
            },
            "minAvailable": int(podutil.spec(job).get("minAvailable") or 0),
            **counts,
            "version": version,
            "retryCount": retries,
            "taskStatusCount": per_task,
            "controlledResources": {
                **{f"plugin-{n}": n for n in plugins if n in ("svc", "ssh")},
                **{
                    f"volume-pvc-{c}": c
                    for c in (
                        vcjob_pods.claim_name(job, i, vol)
                        for i, vol in enumerate(vcjob_pods.volumes(job))
                    )
                },
            },
        }
        if all(old.get(k) == v for k, v in status.items()):
            return True
        try:
            self.client.update_status(volcano.JOB_KEY, {**job, "status": status})
        except (errors.NotFound, errors.Conflict):
            self.enqueue_after(object_key(job), 0.5)
            return False
        return True

    def _ttl(self, job: Object, phase: str) -> float | None:
        ttl = podutil.spec(job).get("ttlSecondsAfterFinished")
        if phase not in FINISHED or ttl is None:
            return None
        since = rfc3339.parse_time(
            (podutil.status(job).get("state") or {}).get("lastTransitionTime")
        )
        left = (since or self.clock.now()) + int(ttl) - self.clock.now()
        if left > 0:
            return left
        try:
            self.client.delete(volcano.JOB_KEY, podutil.name_of(job), podutil.namespace_of(job))
        except errors.NotFound:
            pass
        return None


def init(ctx: ControllerContext) -> Controller:
    return VolcanoJobController(ctx)
