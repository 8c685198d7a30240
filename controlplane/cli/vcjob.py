"""skiffctl job: Volcano jobs in the spirit of vcctl.

    skiffctl job list [-n NS]          the jobs, as `get vcjob` prints them
    skiffctl job view -N NAME          one job: tasks, policies, status, its pods
    skiffctl job suspend -N NAME       abort it (pods killed, phase Aborted)
    skiffctl job resume -N NAME        start an aborted job again

suspend and resume create a bus.volcano.sh Command (AbortJob/ResumeJob)
targeting the job, as vcctl does; the Job controller consumes it once.
"""

from __future__ import annotations

import argparse

from controlplane.api import kinds, volcano
from controlplane.cli import printers
from controlplane.cli.context import CliError, Context


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("list", "view", "suspend", "resume"))
    parser.add_argument("-N", "--name", default="", help="the job's name")


def run(ctx: Context) -> int:
    action, name = ctx.args.action, ctx.args.name
    info = kinds.by_kind(volcano.JOB_KEY)
    if action == "list":
        jobs = ctx.client.list(volcano.JOB_KEY, ctx.namespace).items
        if not jobs:
            ctx.out(f"No resources found in {ctx.namespace} namespace.")
            return 0
        ctx.out(printers.TablePrinter(info, ctx.now()).table(jobs).rstrip("\n"))
        return 0
    if not name:
        raise CliError(f"job {action} needs -N NAME")
    job = ctx.client.get(volcano.JOB_KEY, name, ctx.namespace)
    if action == "view":
        pods = [
            p
            for p in ctx.client.list("Pod", ctx.namespace).items
            if (p["metadata"].get("labels") or {}).get(volcano.JOB_NAME) == name
        ]
        ctx.out(printers.to_yaml({"spec": job.get("spec"), "status": job.get("status")}).rstrip())
        if pods:
            pod_info = kinds.by_kind("Pod")
            ctx.out(printers.TablePrinter(pod_info, ctx.now()).table(pods).rstrip("\n"))
        return 0
    command = "AbortJob" if action == "suspend" else "ResumeJob"
    ctx.client.create("Command", volcano.command_for(job, command, ctx.namespace), ctx.namespace)
    ctx.out(f"job.batch.volcano.sh/{name} {'suspended' if action == 'suspend' else 'resumed'}")
    return 0
