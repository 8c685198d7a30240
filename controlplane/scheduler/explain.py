"""Human-readable scheduling explanations from a pod object, for `skiffctl describe`.

`describe_scheduling(pod)` reads what the scheduler wrote on the pod — the
PodScheduled=False condition with kube-scheduler's "0/N nodes are available"
message, status.nominatedNodeName, and the `scheduler.skiff.dev/scores`
annotation with the per-plugin scores of the decision — and returns lines of
text; volume reasons (claims, volumes, access modes) get a line saying what
they mean. Pure: no API access; the CLI fetches the pod and prints the lines.
"""

from __future__ import annotations

import json
from typing import Any

SCORES_ANNOTATION = "scheduler.skiff.dev/scores"


# What the volume plugins' reasons mean for the user, and what to do about them.
VOLUME_HINTS: tuple[tuple[str, str], ...] = (
    ("persistentvolumeclaim \"", "a claim the pod names is missing or being deleted: create it "
     "or fix spec.volumes[].persistentVolumeClaim.claimName"),
    ("unbound immediate PersistentVolumeClaims", "a claim of an Immediate class is not bound "
     "yet: see its events (skiffctl describe pvc) for why no volume serves it"),
    ("volume node affinity conflict", "a bound volume is pinned to other nodes (its "
     "nodeAffinity); the pod can only run where its data is"),
    ("didn't find available persistent volumes", "no free volume fits a claim on these nodes "
     "and no provisioner can make one"),
    ("local-path provisioner", "these nodes' agents do not announce a local-path root"),
    ("ReadWriteOnce persistentvolumeclaim", "a ReadWriteOnce claim is in use on another node: it can be mounted on "
     "one node at a time; delete the other pod or use a ReadWriteMany volume"),
    ("ReadWriteOncePod", "a ReadWriteOncePod claim is in use by another pod"),
    ("exceed max volume count", "these nodes have as many volumes as they can attach"),
    ("no available volume zone", "a bound volume's zone or region differs from these nodes'"),
)  # fmt: skip


def volume_hints(message: str) -> list[str]:
    """Explanations of the volume reasons in an unschedulable message."""
    return [f"  volumes: {hint}" for needle, hint in VOLUME_HINTS if needle in message]


def describe_scheduling(pod: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    node = spec.get("nodeName")
    for cond in status.get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            lines.append(f"Unschedulable: {cond.get('message', '')}")
            lines.extend(volume_hints(str(cond.get("message", ""))))
    if status.get("nominatedNodeName") and not node:
        lines.append(
            f"Nominated node: {status['nominatedNodeName']} (waiting for preempted pods to go)"
        )
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(SCORES_ANNOTATION)
    if raw:
        try:
            scores = json.loads(raw)
        except ValueError:
            return [*lines, f"Scores: unreadable annotation {SCORES_ANNOTATION}"]
        lines.append(
            f"Scheduled on {node or '?'} (feasible nodes scored: {scores.get('feasibleNodes', '?')})"
        )
        entries = [(label, scores[label]) for label in ("chosen", "runnerUp") if label in scores]
        plugins = sorted({p for _, e in entries for p in e.get("plugins", {})})
        if plugins:
            header = f"  {'plugin':<34}" + "".join(f"{e['node'][:24]:>26}" for _, e in entries)
            lines.append(header)
            for p in plugins:
                row = f"  {p:<34}"
                for _, e in entries:
                    score, weight = e["plugins"].get(p, [0, 0])
                    row += f"{f'{score} x{weight}':>26}"
                lines.append(row)
            lines.append(f"  {'total':<34}" + "".join(f"{e['total']:>26}" for _, e in entries))
        else:
            lines.append("  the only feasible node: not scored")
    return lines
