"""Volcano's example Job with real pods on `skiff up`, applied with kubectl
(issue 19).

The manifest keeps every field of Volcano's example/job.yaml (gang of
minAvailable 3 over 6 replicas of one task, schedulerName volcano, the
PodEvicted -> RestartJob policy, the ssh/env/svc plugins, maxRetry, queue
default); only the image is swapped for a local one from the session's
registry (mirrored as docker.io) and the CPU request scaled to a small node.
The image's entrypoint is the task: serve its hostname over HTTP, then
find the next task by its svc-plugin short name `<job>-<task>-<i+1>.<job>`
(resolv.conf's search list, ndots:5) with busybox's nslookup, which sends
that dotted name as it stands (the cluster DNS answers it under the pod's
search list), and fetch the peer's page with busybox's wget, whose lookup
goes through libc's getaddrinfo (which applies the search list itself). The
Job and its PodGroup end Completed and every task's log shows both lookups.

Before that, vcctl's `queue operate` by hand: a bus.volcano.sh Command made
with `kubectl create` closes the default queue, kubectl's apply of the Job
is refused with Volcano's admission message, and another Command opens it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane.api import volcano
from tests.fakes.volcano_examples import example_job_yaml
from tests.harness.images import TestImages
from tests.harness.images.manifest import ImageConfig
from tests.harness.images.tree import Tree
from tests.harness.kubectl import GO_ENV, NEWEST
from tests.harness.nodeprocs import free_service_cidrs, registries_yaml, short_tempdir
from tests.harness.registry import Registry
from tests.harness.skiff_up import Up, free_cluster_cidrs
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow]

KUBECTL = str(NEWEST) if NEWEST.exists() else None  # never the /usr/bin dispatcher
JOB = "test-job"
TASK = "default-nginx"
REPLICAS = 6
IMAGE = "skiff-e2e/vctask:1"

# The task: $VK_TASK_INDEX comes from the env plugin, the hostname and the
# Service `test-job` from the svc plugin.
TASK_SCRIPT = f"""#!/bin/sh
me=$(hostname)
peer={JOB}-{TASK}-$(( (VK_TASK_INDEX + 1) % {REPLICAS} )).{JOB}
mkdir -p /w && echo "$me" > /w/index.html && httpd -p 80 -h /w
n=0
until nslookup "$peer" > /tmp/ns 2>&1 && wget -q -O /tmp/peer "http://$peer/"; do
    n=$((n + 1)); [ $n -ge 240 ] && {{ cat /tmp/ns; exit 1; }}; sleep 0.5
done
echo "nslookup $peer: $(grep -c '^Address: ' /tmp/ns) address(es)"
echo "wget $peer: $(cat /tmp/peer)"
sleep 20
"""

# example/job.yaml with the image and the CPU request swapped.
JOB_YAML = example_job_yaml(name=JOB, task=TASK, replicas=REPLICAS, image=IMAGE, cpu="100m")


class Kubectl:
    def __init__(self, kubeconfig: Path, home: Path) -> None:
        self.env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "KUBECONFIG": str(kubeconfig),
                    **GO_ENV}  # fmt: skip

    def run(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        return subprocess.run(
            [KUBECTL, *args], input=input, capture_output=True, text=True, timeout=60,
            env=self.env, check=False,
        )  # fmt: skip

    def __call__(self, *args: str, input: str | None = None) -> str:
        done = self.run(*args, input=input)
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout


def queue_command(action: str) -> str:
    """What vcctl's `queue operate` creates (without the ownerReference)."""
    return f"""\
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata:
  generateName: default-{action.lower()}-
  namespace: default
action: {action}
target:
  apiVersion: scheduling.volcano.sh/v1beta1
  kind: Queue
  name: default
"""


@pytest.fixture
def up(images: TestImages, registry: Registry) -> Iterator[Up]:
    if KUBECTL is None:
        pytest.skip(f"kubectl is not installed at {NEWEST}")
    task = Tree().file("bin/vctask", TASK_SCRIPT, mode=0o755)
    image = images.custom("vctask", [task], ImageConfig(cmd=["/bin/vctask"]), tag="1")
    registry.push(image, repository="skiff-e2e/vctask", tag="1")
    base = short_tempdir("skvc-")
    u = Up("vc", base / "up", free_cluster_cidrs(1)[0], free_service_cidrs(1)[0])
    try:
        u.data_dir.mkdir()
        u.start(registries_yaml(base / "registries.yaml", registry.url, ("docker.io",)))
        yield u
    except BaseException:
        sys.stderr.write(u.log_tail() + "\n")
        raise
    finally:
        try:
            u.cleanup()
        finally:
            shutil.rmtree(base, ignore_errors=True)


def test_example_job_runs_to_completed_on_skiff_up(up: Up) -> None:
    api = up.wait_ready()
    kubectl = Kubectl(up.data_dir / "kubeconfig", up.data_dir)

    def queue_state() -> str:
        return kubectl("get", "queue", "default", "-o", "jsonpath={.status.state}")

    assert "created" in kubectl("create", "-f", "-", input=queue_command("CloseQueue"))
    wait_for(lambda: queue_state() == "Closed", timeout=30, message="queue default Closed")
    refused = kubectl.run("apply", "-f", "-", input=JOB_YAML)
    assert refused.returncode != 0
    assert "can only submit job to queue with state `Open`" in refused.stderr, refused.stderr
    kubectl("create", "-f", "-", input=queue_command("OpenQueue"))
    wait_for(lambda: queue_state() == "Open", timeout=30, message="queue default Open")
    assert "created" in kubectl("apply", "-f", "-", input=JOB_YAML)

    def phase() -> str:
        return kubectl("get", "vcjob", JOB, "-o", "jsonpath={.status.state.phase}")

    done = wait_for(
        lambda: (p := phase()) in ("Completed", "Failed", "Aborted", "Terminated") and p,
        timeout=180,
        interval=1,
        message="the Volcano Job to finish",
    )
    assert done == "Completed", kubectl("get", "vcjob", JOB, "-o", "yaml")
    job = api.get(volcano.JOB_KEY, JOB, "default")
    assert job["status"].get("succeeded") == REPLICAS, job["status"]
    # The PodGroup's phase follows at the batch scheduler's next session.
    wait_for(
        lambda: (
            kubectl("get", "podgroup", "-o", "jsonpath={.items[*].status.phase}") == "Completed"
        ),
        timeout=30,
        message="the PodGroup Completed",
    )
    for i in range(REPLICAS):
        log = kubectl("logs", f"{JOB}-{TASK}-{i}")
        peer = f"{JOB}-{TASK}-{(i + 1) % REPLICAS}"
        assert f"nslookup {peer}.{JOB}: 1 address(es)" in log, log
        assert f"wget {peer}.{JOB}: {peer}" in log, log
    api.close()
