"""Volcano's example/job.yaml, one home for the tests that apply it.

Every field of the example is kept: a gang of minAvailable 3 over 6 replicas
of one task, schedulerName volcano, the PodEvicted -> RestartJob policy, the
ssh/env/svc plugins, maxRetry 5, queue default (its volume section is
commented out there too). A test may swap the name, the task's name and
replicas, the image and the CPU request (scaled to its nodes); the defaults
are the example's own.
"""

from __future__ import annotations

from typing import Any

import yaml


def example_job_yaml(
    name: str = "test-job",
    task: str = "default-nginx",
    replicas: int = 6,
    image: str = "nginx",
    cpu: str = "1",
) -> str:
    return f"""\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
spec:
  minAvailable: 3
  schedulerName: volcano
  policies:
    - event: PodEvicted
      action: RestartJob
  plugins:
    ssh: []
    env: []
    svc: []
  maxRetry: 5
  queue: default
  tasks:
    - replicas: {replicas}
      name: "{task}"
      template:
        metadata:
          name: web
        spec:
          containers:
            - image: {image}
              imagePullPolicy: IfNotPresent
              name: nginx
              resources:
                requests:
                  cpu: "{cpu}"
          restartPolicy: OnFailure
"""


def example_job(
    name: str = "test-job", replicas: int = 6, min_available: int = 3
) -> dict[str, Any]:
    """The example as an object, with its gang resized: `replicas` of the
    task, `min_available` of them at once."""
    job: dict[str, Any] = yaml.safe_load(example_job_yaml(name=name, replicas=replicas))
    job["spec"]["minAvailable"] = min_available
    return job


# Volcano's installer/helm/chart/volcano/config/volcano-scheduler-ci.conf as it
# stands: the scheduler configuration its e2e suites run with.
VOLCANO_CI_CONF = """actions: "enqueue, allocate, backfill, reclaim, preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
  - name: sla
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
    arguments:
      predicate.DynamicResourceAllocationEnable: true
  - name: proportion
  - name: nodeorder
  - name: binpack
  - name: network-topology-aware
"""
