"""skiffctl rollout: status, history, undo, pause, resume and restart, as kubectl has them.

`rollout SUBCOMMAND KIND NAME | TYPE/NAME ...`:

- `status [--revision N] [--timeout D] [-w=false]` prints kubectl's progress
  lines (`Waiting for deployment "web" rollout to finish: 1 out of 3 new
  replicas have been updated...`) as watch events arrive, until the rollout is
  complete (observedGeneration >= generation, updated == desired, no old
  replicas left, every updated replica available) or the timeout on the
  injected clock passes. Deployments, StatefulSets and DaemonSets.
- `history [--revision N]` lists the revisions a Deployment's ReplicaSets
  carry (`deployment.kubernetes.io/revision`) with their
  `kubernetes.io/change-cause`, or shows one revision's pod template.
- `undo [--to-revision N]` is kubectl's client-side rollback: the chosen
  revision's ReplicaSet template (without its pod-template-hash label) and
  annotations are written into the Deployment; the Deployment controller
  then rolls out to it, reusing that ReplicaSet. An unknown revision is
  `error: unable to find specified revision N in history`, exit 1.
- `pause` / `resume` set spec.paused (Deployments); `restart` stamps
  `kubectl.kubernetes.io/restartedAt` into the pod template (Deployments,
  StatefulSets, DaemonSets).

Everything goes through the ApiClient; nothing here knows the controller's
internals beyond the annotation and status names Kubernetes defines.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controlplane.api.kinds import KindInfo
from controlplane.cli import printers
from controlplane.cli.context import CliError, Context
from controlplane.cli.describe import Writer
from controlplane.cli.resources import Target, parse_targets
from controlplane.cli.wait import parse_duration
from controlplane.client import errors
from controlplane.client.interface import ListOptions, Object
from controlplane.controllers.rollout import (
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    POD_TEMPLATE_HASH,
    REVISION,
    REVISION_HISTORY,
    ROLLBACK_TO,
    template_equal,
)
from machinery.rfc3339 import format_time

CHANGE_CAUSE = "kubernetes.io/change-cause"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
# Deployment annotations a rollback keeps from the Deployment rather than
# taking from the ReplicaSet (kubectl's annotationsToSkip).
SKIP_ANNOTATIONS = frozenset(
    {LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS, ROLLBACK_TO}
)
SUBCOMMANDS = ("status", "history", "undo", "pause", "resume", "restart")
UPDATE_RETRIES = 5


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("subcommand", choices=SUBCOMMANDS, metavar="|".join(SUBCOMMANDS))
    parser.add_argument("resources", nargs="+", metavar="KIND NAME | TYPE/NAME")
    parser.add_argument(
        "--revision", type=int, default=0, help="history: show this revision; status: expect it"
    )
    parser.add_argument("--to-revision", type=int, default=0, help="undo: 0 means the previous")
    parser.add_argument("--timeout", default="0s", help="status: give up after this (0: never)")
    parser.add_argument(
        "-w",
        "--watch",
        default="true",
        choices=("true", "false"),
        help="status: wait for the rollout to finish",
    )


# ---- status ------------------------------------------------------------------------


class RolloutFailed(Exception):
    """The rollout cannot finish (progress deadline exceeded, wrong revision)."""


@dataclass(frozen=True)
class Progress:
    message: str
    done: bool


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def deployment_status(obj: Object, revision: int = 0) -> Progress:
    """kubectl's DeploymentStatusViewer."""
    name = printers.name(obj)
    meta, sp, st = printers.meta(obj), printers.spec(obj), printers.status(obj)
    if revision > 0:
        current = _int((meta.get("annotations") or {}).get(REVISION))
        if current != revision:
            raise RolloutFailed(
                f"desired revision ({revision}) is different from the running revision ({current})"
            )
    if _int(meta.get("generation")) > _int(st.get("observedGeneration")):
        return Progress("Waiting for deployment spec update to be observed...", False)
    for c in st.get("conditions") or []:
        if c.get("type") == "Progressing" and c.get("reason") == "ProgressDeadlineExceeded":
            raise RolloutFailed(f'deployment "{name}" exceeded its progress deadline')
    want = _int(sp.get("replicas", 1), 1)
    updated = _int(st.get("updatedReplicas"))
    total = _int(st.get("replicas"))
    available = _int(st.get("availableReplicas"))
    wait = f'Waiting for deployment "{name}" rollout to finish: '
    if updated < want:
        return Progress(f"{wait}{updated} out of {want} new replicas have been updated...", False)
    if total > updated:
        return Progress(f"{wait}{total - updated} old replicas are pending termination...", False)
    if available < updated:
        return Progress(f"{wait}{available} of {updated} updated replicas are available...", False)
    return Progress(f'deployment "{name}" successfully rolled out', True)


def _rolling_only(obj: Object, strategy_field: str) -> None:
    strategy = printers.spec(obj).get(strategy_field) or {}
    if (strategy.get("type") or "RollingUpdate") != "RollingUpdate":
        raise RolloutFailed("rollout status is only available for RollingUpdate strategy type")


def statefulset_status(obj: Object, revision: int = 0) -> Progress:
    """kubectl's StatefulSetStatusViewer."""
    _rolling_only(obj, "updateStrategy")
    meta, sp, st = printers.meta(obj), printers.spec(obj), printers.status(obj)
    observed = _int(st.get("observedGeneration"))
    if observed == 0 or _int(meta.get("generation")) > observed:
        return Progress("Waiting for statefulset spec update to be observed...", False)
    want = _int(sp.get("replicas", 1), 1)
    ready = _int(st.get("readyReplicas"))
    if ready < want:
        return Progress(f"Waiting for {want - ready} pods to be ready...", False)
    rolling = (sp.get("updateStrategy") or {}).get("rollingUpdate") or {}
    updated = _int(st.get("updatedReplicas"))
    if rolling.get("partition") is not None:
        target = want - _int(rolling.get("partition"))
        if updated < target:
            return Progress(
                "Waiting for partitioned roll out to finish: "
                f"{updated} out of {target} new pods have been updated...",
                False,
            )
        return Progress(
            f"partitioned roll out complete: {updated} new pods have been updated...", True
        )
    update_rev, current_rev = st.get("updateRevision"), st.get("currentRevision")
    if update_rev != current_rev:
        return Progress(
            "waiting for statefulset rolling update to complete "
            f"{updated} pods at revision {update_rev}...",
            False,
        )
    return Progress(
        f"statefulset rolling update complete {want} pods at revision {current_rev}...", True
    )


def daemonset_status(obj: Object, revision: int = 0) -> Progress:
    """kubectl's DaemonSetStatusViewer."""
    _rolling_only(obj, "updateStrategy")
    name = printers.name(obj)
    meta, st = printers.meta(obj), printers.status(obj)
    if _int(meta.get("generation")) > _int(st.get("observedGeneration")):
        return Progress("Waiting for daemon set spec update to be observed...", False)
    desired = _int(st.get("desiredNumberScheduled"))
    updated = _int(st.get("updatedNumberScheduled"))
    available = _int(st.get("numberAvailable"))
    wait = f'Waiting for daemon set "{name}" rollout to finish: '
    if updated < desired:
        return Progress(f"{wait}{updated} out of {desired} new pods have been updated...", False)
    if available < desired:
        return Progress(f"{wait}{available} of {desired} updated pods are available...", False)
    return Progress(f'daemon set "{name}" successfully rolled out', True)


StatusViewer = Callable[[Object, int], Progress]
STATUS_VIEWERS: dict[str, StatusViewer] = {
    "Deployment": deployment_status,
    "StatefulSet": statefulset_status,
    "DaemonSet": daemonset_status,
}


def _status(ctx: Context, info: KindInfo, name: str) -> int:
    viewer = STATUS_VIEWERS.get(info.key)
    if viewer is None:
        raise CliError(f"no status viewer has been implemented for {info.key}")
    timeout = parse_duration(ctx.args.timeout)
    follow = ctx.args.watch == "true"
    ns = ctx.namespace
    last = ""

    def show(obj: Object) -> bool:
        nonlocal last
        try:
            progress = viewer(obj, ctx.args.revision)
        except RolloutFailed as err:
            raise CliError(str(err)) from None
        if progress.message != last:
            ctx.out(progress.message)
            last = progress.message
        return progress.done

    obj = ctx.client.get(info.key, name, ns)
    if show(obj) or not follow:
        return 0
    rv = str(printers.meta(obj).get("resourceVersion", ""))
    timed_out = False
    deadline = ctx.clock.monotonic() + timeout if timeout > 0 else None
    selector = f"metadata.name={name}"
    while True:
        try:
            watch = ctx.client.watch(
                info.key, ns, ListOptions(field_selector=selector, resource_version=rv)
            )
        except errors.Gone:
            watch = None
        if watch is None:
            # Our version fell out of the server's history: read the object again.
            obj = ctx.client.get(info.key, name, ns)
            rv = str(printers.meta(obj).get("resourceVersion", ""))
            if show(obj):
                return 0
            continue

        def expire(w: Any = watch) -> None:
            nonlocal timed_out
            timed_out = True
            w.stop()

        timer = (
            ctx.clock.call_later(max(0.0, deadline - ctx.clock.monotonic()), expire)
            if deadline is not None
            else None
        )
        try:
            for event in watch:
                rv = str(printers.meta(event.object).get("resourceVersion") or rv)
                if event.type == "BOOKMARK" or printers.name(event.object) != name:
                    continue
                if event.type == "DELETED":
                    raise CliError("object has been deleted")
                if show(event.object):
                    return 0
        except errors.Gone:
            obj = ctx.client.get(info.key, name, ns)
            rv = str(printers.meta(obj).get("resourceVersion", ""))
            if show(obj):
                return 0
        finally:
            if timer is not None:
                timer.cancel()
            watch.stop()
        if timed_out or (deadline is not None and ctx.clock.monotonic() >= deadline):
            raise CliError("timed out waiting for the condition")
        # The server closed the stream: watch again from the last version seen.


# ---- history ------------------------------------------------------------------------


def _need_deployment(info: KindInfo, what: str) -> None:
    if info.key != "Deployment":
        raise CliError(f"no {what} has been implemented for {info.key} (only Deployments)")


def revisions(ctx: Context, deployment: Object) -> dict[int, Object]:
    """The Deployment's ReplicaSets by revision (those it controls)."""
    uid = printers.meta(deployment).get("uid")
    ns = printers.meta(deployment).get("namespace") or ctx.namespace
    out: dict[int, Object] = {}
    token = ""
    while True:
        page = ctx.client.list("ReplicaSet", ns, ListOptions(continue_token=token))
        for rs in page.items:
            refs = printers.meta(rs).get("ownerReferences") or []
            if not any(r.get("controller") and r.get("uid") == uid for r in refs):
                continue
            rev = _int((printers.meta(rs).get("annotations") or {}).get(REVISION), -1)
            if rev >= 0:
                out[rev] = rs
        token = page.continue_token
        if not token:
            return out


def _template_text(template: Object) -> str:
    """A pod template as kubectl's DescribePodTemplate prints it (the common fields)."""
    w = Writer()
    meta = template.get("metadata") or {}
    spec = template.get("spec") or {}
    w.head("Pod Template")
    w.multi("Labels", meta.get("labels"), 2)
    if meta.get("annotations"):
        w.multi("Annotations", meta.get("annotations"), 2)
    for section, key in (("Init Containers", "initContainers"), ("Containers", "containers")):
        if key == "initContainers" and not spec.get(key):
            continue
        w.head(section, 2)
        for c in spec.get(key) or []:
            w.head(str(c.get("name")), 3)
            w.field("Image", c.get("image"), 4)
            ports = [
                f"{p.get('containerPort')}/{p.get('protocol', 'TCP')}" for p in c.get("ports") or []
            ]
            w.field("Port", ", ".join(ports) or None, 4)
            if c.get("command"):
                w.field("Command", " ".join(str(x) for x in c["command"]), 4)
            if c.get("args"):
                w.field("Args", " ".join(str(x) for x in c["args"]), 4)
            for res in ("limits", "requests"):
                if (c.get("resources") or {}).get(res):
                    w.head(res.capitalize(), 4)
                    for k, v in sorted(c["resources"][res].items()):
                        w.field(k, v, 6)
            env = [f"{e.get('name')}={e.get('value', '')}" for e in c.get("env") or []]
            w.field("Environment", env or None, 4)
            mounts = [
                f"{m.get('mountPath')} from {m.get('name')}" for m in c.get("volumeMounts") or []
            ]
            w.field("Mounts", mounts or None, 4)
    w.field("Volumes", [v.get("name") for v in spec.get("volumes") or []] or None, 2)
    w.multi("Node-Selectors", spec.get("nodeSelector"), 2)
    return w.text()


def _history(ctx: Context, info: KindInfo, name: str) -> int:
    _need_deployment(info, "history viewer")
    d = ctx.client.get(info.key, name, ctx.namespace)
    history = revisions(ctx, d)
    label = printers.type_name(info, name)
    wanted = ctx.args.revision
    if wanted > 0:
        rs = history.get(wanted)
        if rs is None:
            raise CliError("unable to find the specified revision")
        template = dict(printers.spec(rs).get("template") or {})
        meta = dict(template.get("metadata") or {})
        cause = (printers.meta(rs).get("annotations") or {}).get(CHANGE_CAUSE)
        if cause:
            meta["annotations"] = {**(meta.get("annotations") or {}), CHANGE_CAUSE: cause}
        template["metadata"] = meta
        ctx.out(f"{label} with revision #{wanted}")
        ctx.stdout.write(_template_text(template))
        ctx.stdout.flush()
        return 0
    if not history:
        ctx.out(f"No rollout history found in {label}")
        return 0
    rows = []
    for rev in sorted(history):
        cause = (printers.meta(history[rev]).get("annotations") or {}).get(CHANGE_CAUSE)
        rows.append([str(rev), cause or printers.NONE])
    ctx.out(f"{label} ")
    ctx.stdout.write(printers.format_table(["REVISION", "CHANGE-CAUSE"], rows))
    ctx.out("")
    return 0


# ---- undo -----------------------------------------------------------------------------


def pick_revision(history: dict[int, Object], to_revision: int, name: str) -> tuple[int, Object]:
    """The ReplicaSet to roll back to: `to_revision`, or the one before the newest (0)."""
    if to_revision < 0:
        raise CliError(f"unable to find specified revision {to_revision} in history")
    if to_revision > 0:
        rs = history.get(to_revision)
        if rs is None:
            raise CliError(f"unable to find specified revision {to_revision} in history")
        return to_revision, rs
    ordered = sorted(history)
    if len(ordered) < 2:
        raise CliError(f'no rollout history found for deployment "{name}"')
    return ordered[-2], history[ordered[-2]]


def _update(
    ctx: Context, info: KindInfo, name: str, change: Callable[[Object], str | None]
) -> tuple[Object, str | None]:
    """Get, change, update with the resourceVersion; retry on conflicts.

    `change` edits the object in place and returns a message to print
    instead of writing (nothing to do), or None to write it.
    """
    for attempt in range(UPDATE_RETRIES):
        obj = ctx.client.get(info.key, name, ctx.namespace)
        skipped = change(obj)
        if skipped is not None:
            return obj, skipped
        try:
            return ctx.client.update(info.key, obj), None
        except errors.Conflict:
            if attempt == UPDATE_RETRIES - 1:
                raise
    raise AssertionError("unreachable")


def _undo(ctx: Context, info: KindInfo, name: str) -> int:
    _need_deployment(info, "rollbacker")
    label = printers.type_name(info, name)

    def rollback(d: Object) -> str | None:
        if printers.spec(d).get("paused"):
            raise CliError(
                "you cannot rollback a paused deployment; resume it first with "
                f"'skiffctl rollout resume {label}' and try again"
            )
        revision, rs = pick_revision(revisions(ctx, d), ctx.args.to_revision, name)
        template: Object = dict(printers.spec(rs).get("template") or {})
        if template_equal(template, printers.spec(d).get("template") or {}):
            return f"skipped rollback (current template already matches revision {revision})"
        tmeta = dict(template.get("metadata") or {})
        labels = {k: v for k, v in (tmeta.get("labels") or {}).items() if k != POD_TEMPLATE_HASH}
        tmeta["labels"] = labels
        template["metadata"] = tmeta
        current = printers.meta(d).get("annotations") or {}
        annotations = {k: v for k, v in current.items() if k in SKIP_ANNOTATIONS}
        for k, v in (printers.meta(rs).get("annotations") or {}).items():
            if k not in SKIP_ANNOTATIONS:
                annotations[k] = v
        d["metadata"]["annotations"] = annotations
        d["spec"]["template"] = template
        return None

    _, skipped = _update(ctx, info, name, rollback)
    ctx.out(f"{label} {skipped or 'rolled back'}")
    return 0


# ---- pause, resume, restart ------------------------------------------------------------


def _pause(ctx: Context, info: KindInfo, name: str, paused: bool) -> int:
    _need_deployment(info, "pauser" if paused else "resumer")
    d = ctx.client.get(info.key, name, ctx.namespace)
    if bool(printers.spec(d).get("paused")) == paused:
        state = "already paused" if paused else "not paused"
        raise CliError(f'{info.resource} "{name}" is {state}')
    ctx.client.patch(info.key, name, {"spec": {"paused": paused}}, ctx.namespace)
    ctx.out(f"{printers.type_name(info, name)} {'paused' if paused else 'resumed'}")
    return 0


def _restart(ctx: Context, info: KindInfo, name: str) -> int:
    if info.key not in ("Deployment", "StatefulSet", "DaemonSet"):
        raise CliError(f"restarting is not supported for {info.key}")
    d = ctx.client.get(info.key, name, ctx.namespace)
    if info.key == "Deployment" and printers.spec(d).get("paused"):
        raise CliError("can't restart paused deployment (run rollout resume first)")
    stamp = format_time(ctx.clock.now())
    patch = {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: stamp}}}}}
    ctx.client.patch(info.key, name, patch, ctx.namespace)
    ctx.out(f"{printers.type_name(info, name)} restarted")
    return 0


def run(ctx: Context) -> int:
    args = ctx.args
    targets: list[Target] = parse_targets(args.resources, need_name=True)
    if args.subcommand == "status" and len(targets) > 1:
        raise CliError("rollout status takes one resource")
    failed = 0
    for t in targets:
        assert t.name is not None
        try:
            if args.subcommand == "status":
                return _status(ctx, t.info, t.name)
            if args.subcommand == "history":
                _history(ctx, t.info, t.name)
            elif args.subcommand == "undo":
                _undo(ctx, t.info, t.name)
            elif args.subcommand == "pause":
                _pause(ctx, t.info, t.name, True)
            elif args.subcommand == "resume":
                _pause(ctx, t.info, t.name, False)
            else:
                _restart(ctx, t.info, t.name)
        except CliError as err:
            if len(targets) == 1:
                raise
            ctx.err(f"error: {err}")
            failed += 1
    return 1 if failed else 0
