"""The gang plugin's per-job checks, microseconds per call, in process.

The batch scheduler asks whether a job is ready after each task it places
and whether it is valid once per session; Volcano's rules (JobInfo's
CheckTaskReady/CheckTaskValid: per-task minimums only where the job's
minAvailable covers them) must cost no more than the all-tasks check they
replaced. Jobs: the end-to-end bench's (10 tasks, minAvailable 10,
minTaskMember {t: 10}) and an elastic one (minAvailable 2 over 16).

    .venv/bin/python -m bench.volcano_gang [--calls 200000]

Prints a table; the last line is one JSON object of figure -> number. The
peer is the code before issue 35 (measured on the same machine: ready
5.4-7.1 us, valid 0.46-0.67 us per call for the 10-task job, where this
bench then measured ready 1.8-2.5 us, valid 0.44-0.66 us; a loaded machine).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from bench.stats import report
from controlplane.api import volcano
from controlplane.scheduler.batch import plugins
from controlplane.scheduler.batch.info import JobInfo
from controlplane.scheduler.podinfo import PodInfo
from tests.fakes.scheduler_objects import make_pod


def _job(tasks: int, min_available: int) -> JobInfo:
    pods = [
        PodInfo.of(make_pod(f"p{i}", cpu="1", annotations={volcano.TASK_SPEC: "t"}), {})
        for i in range(tasks)
    ]
    job = JobInfo("default/j", {}, "default", min_available, {"t": tasks}, {}, 0, 0.0, "Running",
                  min_task_total=tasks, members={"t": tasks})  # fmt: skip
    for p in pods:
        job.placed[p.key] = p
        job.place(p, 1)
    return job


def per_call(fn: Any, job: JobInfo, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(job)
    return (time.perf_counter() - t0) / calls * 1e6


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.volcano_gang")
    p.add_argument("--calls", type=int, default=200_000)
    args = p.parse_args(argv)
    figures: dict[str, float] = {}
    for label, job in (("gang10", _job(10, 10)), ("elastic2of16", _job(16, 2))):
        figures[f"{label}_ready_us"] = round(per_call(plugins.ready, job, args.calls), 3)
        figures[f"{label}_valid_us"] = round(per_call(plugins.invalid, job, args.calls), 3)
    report(figures, width=30, column=12, header="us per call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
