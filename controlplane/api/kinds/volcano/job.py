"""Volcano's Job (batch.volcano.sh/v1alpha1, key Job.batch.volcano.sh): its validation and admission.

Volcano's job webhook's rules (and its CRD schema's), so that its example
manifests apply unchanged and its invalid ones (example/invalid_jobs/) are
refused naming the field, in Volcano's words:

- the job's name and its pods' (`<job>-<task>-<task's index>`) are
  qualified names (at most 63 characters), on create;
- at least one task; task names are unique DNS labels; counts are >= 0;
  a task's `minAvailable` is not above its replicas, the job's not above
  the sum of the tasks' replicas;
- a policy names an event (or events) or an exit code, not both and not
  neither; an exit code is not 0 and not given twice; an event appears in
  one policy only (given twice in one policy it counts once); `*` stands
  alone; actions and events are Volcano's;
- tasks' `dependsOn` form a directed acyclic graph;
- plugins are `env`, `svc`, `ssh`; volumes have a unique mountPath and
  name an existing claim or describe a new one.

Admission: on create the queue must exist, be Open and be a leaf (no child
queues; not `root`); an update may change only `minAvailable`, the tasks'
`replicas` (and their `minAvailable`) and `priorityClassName`: it may not
add or remove tasks nor move the job to another queue. Defaults:
controlplane/api/volcano.py's. Columns: NAME PHASE MIN REPLICAS RUNNING
SUCCEEDED FAILED RETRIES AGE.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from controlplane.api import volcano
from controlplane.api.checks import (
    DNS_SUBDOMAIN_MESSAGE,
    QUALIFIED_NAME_MESSAGE,
    Errors,
    objects,
)
from controlplane.api.display import age, name, spec, status
from controlplane.api.dnsnames import is_dns_label, is_dns_subdomain
from controlplane.api.kinds.definition import AdmissionApi, KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared import podspec
from controlplane.api.kinds.volcano.queue import ROOT, check_open, children
from controlplane.client.errors import Invalid

Object = dict[str, Any]
DNS_LABEL = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
RESTART_POLICIES = ("Always", "OnFailure", "Never")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


# The events a policy may name (Volcano's policyEventMap's external ones:
# not PodRunning, OutOfSync, CommandIssued; its JobUnknownEvent is "Unknown").
POLICY_EVENTS = ("*", "PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted",
                 "JobUpdated", "TaskFailed")  # fmt: skip
VALID = (f"valid events are [{' '.join(POLICY_EVENTS)}], "
         f"valid actions are [{' '.join(volcano.ACTIONS)}]")  # fmt: skip


def _events(pol: Object) -> list[str]:
    """The policy's events, each once (Volcano de-duplicates them within a policy)."""
    names = [*(pol.get("events") or []), *([pol["event"]] if pol.get("event") else [])]
    return list(dict.fromkeys(str(n) for n in names))


def _policies(e: Errors, path: str, policies: Any) -> None:
    """Volcano's validatePolicies."""
    if policies is None:
        return
    if not isinstance(policies, list):
        e.add(path, "must be a list")
        return
    seen: set[str] = set()
    codes: set[int] = set()
    for where, pol in objects(e, path, policies):
        events, code = _events(pol), pol.get("exitCode")
        if events and code is not None:
            e.add(where, "must not specify event and exitCode simultaneously")
            continue
        if not events and code is None:
            e.add(where, "either event and exitCode should be specified")
            continue
        action = pol.get("action")
        if action is not None and action not in volcano.ACTIONS:
            e.invalid(f"{where}.action", action, f"invalid policy action; {VALID}")
        elif action is None and events:  # the webhook checks an event policy's action
            e.invalid(f"{where}.action", "", f"invalid policy action; {VALID}")
        for ev in events:
            if ev not in POLICY_EVENTS:
                e.invalid(f"{where}.event", ev, f"invalid policy event; {VALID}")
            elif ev in seen:
                e.add(f"{where}.event", f"duplicate event {ev}  across different policy")
            seen.add(ev)
        if code is not None:
            if isinstance(code, bool) or not isinstance(code, int):
                e.add(f"{where}.exitCode", f"must be an integer, not {code!r}")
            elif code == 0:
                e.add(f"{where}.exitCode", "0 is not a valid error code")
            elif code in codes:
                e.add(f"{where}.exitCode", f"duplicate exitCode {code}")
            else:
                codes.add(code)
    if "*" in seen and len(seen) > 1:
        e.add(path, "if there's * here, no other policy should be here")


def _volumes(e: Errors, volumes: Any) -> None:
    """Volcano's job IO check: each volume has a unique mountPath and names an
    existing claim (volumeClaimName) or describes a new one (volumeClaim), not both."""
    if volumes is None:
        return
    if not isinstance(volumes, list):
        e.add("spec.volumes", "must be a list")
        return
    paths: set[str] = set()
    for where, vol in objects(e, "spec.volumes", volumes):
        path = vol.get("mountPath")
        if not isinstance(path, str) or not path:
            e.add(f"{where}.mountPath", f"Invalid value: {path!r}: {where}.mountPath in body "
                                        "should be at least 1 chars long")  # fmt: skip
        elif path in paths:
            e.add(f"{where}.mountPath", f"duplicated mountPath: {path}")
        else:
            paths.add(path)
        name, claim = vol.get("volumeClaimName"), vol.get("volumeClaim")
        if name is not None and (not isinstance(name, str) or not name):
            e.add(f"{where}.volumeClaimName", "must be a claim name")
        elif name and not is_dns_subdomain(name):
            e.add(f"{where}.volumeClaimName", f"invalid VolumeClaimName {name} : "
                                              f"[{DNS_SUBDOMAIN_MESSAGE}]")  # fmt: skip
        if claim is not None and not isinstance(claim, dict):
            e.add(f"{where}.volumeClaim", "must be a PersistentVolumeClaim spec")
        if not name and claim is None:
            e.add(where, "either VolumeClaim or VolumeClaimName must be specified")
        elif name and claim is not None:
            e.add(where, "conflict: If you want to use an existing PVC, just specify "
                         "VolumeClaimName.If you want to create a new PVC, you do not need to "
                         "specify VolumeClaimName")  # fmt: skip


def _dependencies_form_a_dag(tasks: list[Any]) -> bool:
    """Volcano's topoSort over the tasks' `dependsOn.name`: every task can be
    ordered after the tasks it depends on (one naming no task never can)."""
    needs: dict[str, set[str]] = {}
    for task in tasks:
        if isinstance(task, dict) and isinstance(task.get("name"), str):
            names = (task.get("dependsOn") or {}).get("name") if isinstance(
                task.get("dependsOn"), dict) else None  # fmt: skip
            needs[task["name"]] = {str(n) for n in names or ()}
    done: set[str] = set()
    ready = [t for t, deps in needs.items() if not deps]
    while ready:
        done.add(ready.pop())
        ready.extend(t for t, deps in needs.items()
                     if t not in done and t not in ready and deps <= done)  # fmt: skip
    return len(done) == len(needs)


def _qualified_name_errors(name: str) -> str:
    """IsQualifiedName's errors for a name without a prefix, as Go prints the list."""
    errs = []
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if name and not QUALIFIED_NAME.match(name):
        errs.append(QUALIFIED_NAME_MESSAGE)
    return f"[{' '.join(errs)}]" if errs else ""


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        e.add("spec", "required")
        return
    job = str((obj.get("metadata") or {}).get("name") or "")
    min_available = volcano.nonneg_int(e, "spec.minAvailable", spec.get("minAvailable"))
    volcano.nonneg_int(e, "spec.maxRetry", spec.get("maxRetry"))
    volcano.nonneg_int(e, "spec.ttlSecondsAfterFinished", spec.get("ttlSecondsAfterFinished"))
    volcano.nonneg_int(e, "spec.minSuccess", spec.get("minSuccess"))
    errs = _qualified_name_errors(job) if old is None else ""
    if errs:
        e.add("metadata.name", f"create job with name {job} validate failed {errs}")
    tasks = spec.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        e.add("spec.tasks", "No task specified in job spec")
        return
    names: set[str] = set()
    total = 0
    for i, task in enumerate(tasks):
        where = f"spec.tasks[{i}]"
        if not isinstance(task, dict):
            e.add(where, "must be an object")
            continue
        name = task.get("name")
        if not isinstance(name, str) or not is_dns_label(name):
            e.add(f"{where}.name",
                  f"Invalid value: {name!r}: {where}.name in body should match '{DNS_LABEL}'")  # fmt: skip
        elif name in names:
            e.add(f"{where}.name", f"duplicated task name {name}")
        else:
            names.add(name)
        if isinstance(name, str) and old is None:  # the webhook's, on create
            pod = f"{job}-{name}-{i}"  # MakePodName(job, task, the task's index)
            errs = _qualified_name_errors(pod)
            if errs:
                e.add(f"{where}.name", f"create pod with name {pod} validate failed {errs}")
        replicas = volcano.nonneg_int(e, f"{where}.replicas", task.get("replicas"))
        total += replicas or 0
        task_min = volcano.nonneg_int(e, f"{where}.minAvailable", task.get("minAvailable"))
        if task_min is not None and replicas is not None and task_min > replicas:
            e.add(f"{where}.minAvailable",
                  f"'minAvailable' is greater than 'replicas' in task: {name}, job: {job}")  # fmt: skip
        volcano.nonneg_int(e, f"{where}.maxRetry", task.get("maxRetry"))
        _policies(e, f"{where}.policies", task.get("policies"))
        template = task.get("template")
        if not isinstance(template, dict):
            e.add(f"{where}.template", "required")
        else:
            podspec.validate(e, f"{where}.template.spec", template.get("spec"), RESTART_POLICIES)
    if any(isinstance(t, dict) and t.get("dependsOn") is not None for t in tasks) and (
        not _dependencies_form_a_dag(tasks)
    ):
        e.add("spec.tasks", "job has dependencies between tasks, but doesn't form a directed "
                            "acyclic graph(DAG)")  # fmt: skip
    if min_available is not None and min_available > total:
        e.add("spec.minAvailable",
              "job 'minAvailable' should not be greater than total replicas in tasks")  # fmt: skip
    _policies(e, "spec.policies", spec.get("policies"))
    plugins = spec.get("plugins")
    if plugins is not None:
        if not isinstance(plugins, dict):
            e.add("spec.plugins", "must be an object of plugin name -> arguments")
        else:
            for plugin in plugins:
                if plugin not in volcano.JOB_PLUGINS:
                    e.add(f"spec.plugins.{plugin}", f"unable to find job plugin: {plugin}")
    queue = spec.get("queue")
    if queue is not None and (not isinstance(queue, str) or not queue):
        e.add("spec.queue", "must be a queue name")
    _volumes(e, spec.get("volumes"))


# What a Job update may change (Volcano's validateJobUpdate).
MUTABLE = "`minAvailable`, `tasks[*].replicas under spec` and `PriorityClassName`"


def _frozen(spec: Object) -> Object:
    """The spec without what an update may change."""
    out = copy.deepcopy(spec)
    for key in ("minAvailable", "priorityClassName"):
        out.pop(key, None)
    for task in out.get("tasks") or []:
        if isinstance(task, dict):
            task.pop("replicas", None)
            task.pop("minAvailable", None)
    return out


def admit(api: AdmissionApi, info: KindInfo, obj: Object, old: Object | None) -> None:
    spec = obj.get("spec") or {}
    if old is None:
        name = str(spec.get("queue") or volcano.DEFAULT_QUEUE)
        check_open(api, "spec.queue", name)
        if name == ROOT:
            raise Invalid("spec.queue: can not submit job to root queue")
        kids = children(api, name)
        if kids:
            raise Invalid(f"spec.queue: can only submit job to leaf queue, queue `{name}` has "
                          f"{len(kids)} child queues")  # fmt: skip
        return
    before = old.get("spec") or {}
    if spec == before:
        return  # a status or metadata write
    tasks, old_tasks = spec.get("tasks") or [], before.get("tasks") or []
    if len(tasks) != len(old_tasks):
        raise Invalid("spec.tasks: job updates may not add or remove tasks")
    total = sum(int(t.get("replicas") or 0) for t in tasks if isinstance(t, dict))
    if int(spec.get("minAvailable") or 0) > total:
        raise Invalid(
            "spec.minAvailable: job 'minAvailable' must not be greater than total replicas"
        )
    if _frozen(spec) != _frozen(before):
        raise Invalid(f"spec: job updates may not change fields other than {MUTABLE}")


def row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    replicas = sum(int(t.get("replicas") or 0) for t in spec(obj).get("tasks") or ())
    return [
        name(obj),
        str((st.get("state") or {}).get("phase") or "Pending"),
        str(spec(obj).get("minAvailable", "")),
        str(replicas),
        *(str(st.get(k) or 0) for k in ("running", "succeeded", "failed", "retryCount")),
        age(obj, now),
    ]


DEFINITION = KindDef(
    KindInfo("Job", "batch.volcano.sh/v1alpha1", short_names=("vcjob", "vj"), qualified=True),
    defaults=volcano.default_job,
    validate=validate,
    admit=admit,
    printer=Printer(
        columns(
            ("NAME", "PHASE", "MIN", "REPLICAS", "RUNNING", "SUCCEEDED", "FAILED", "RETRIES", "AGE")
        ),
        row,
    ),
)
