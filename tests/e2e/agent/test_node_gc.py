"""Container GC, image GC and PLEG health on a real runtime (issue 20), on
skiff's runtime and on containerd.

Each node gets short periods for the test (GC every second, PLEG unhealthy
after 3 s without a relist) so that each check takes a few seconds:
- a crash-looping container keeps at most one dead container, and the log
  of a removed container goes with it;
- the runtime process stopped (SIGSTOP by the pid the harness started) turns
  the node NotReady with "PLEG is not healthy", and Ready again on SIGCONT;
- with the image filesystem over the image GC high threshold, an unused
  image is removed and the image a running pod uses is kept.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agent.pod_config import CONTAINER_NAME_LABEL, POD_UID_LABEL
from controlplane.client.apiclient import GrpcApiClient
from proto.runtime.v1 import api_pb2 as cri
from tests.e2e.agent.helpers import (
    E2EImages,
    container_status,
    delete_node_pods,
    dump,
    pod,
    wait_running,
)
from tests.harness.controlplane import ControlPlane
from tests.harness.nodeprocs import Node, RuntimeKind, running_node
from tests.harness.registry import Registry
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow]


@contextmanager
def tuned_node(
    control_plane: ControlPlane,
    admin: GrpcApiClient,
    registry: Registry,
    runtime_kind: RuntimeKind,
    args: tuple[str, ...],
) -> Iterator[Node]:
    with running_node(
        f"127.0.0.1:{control_plane.port}",
        control_plane.data_dir,
        runtime_kind,
        registry.url,
        # No cluster DNS (none of these tests resolve names): its default
        # address is one per host, taken by any other e2e node running now.
        agent_args=(*args, "--cluster-dns", ""),
    ) as n:
        try:
            n.wait_ready(admin)
            yield n
        except BaseException:
            dump(admin, n)
            raise
        finally:
            delete_node_pods(admin, n.spec.name)


def node_ready(admin: GrpcApiClient, n: Node) -> dict[str, Any]:
    for c in admin.get("Node", n.spec.name)["status"].get("conditions") or []:
        if c["type"] == "Ready":
            found: dict[str, Any] = c
            return found
    return {}


def test_crash_loop_keeps_one_dead_container_and_its_log(
    control_plane: ControlPlane,
    admin: GrpcApiClient,
    registry: Registry,
    e2e_images: E2EImages,
    runtime_kind: RuntimeKind,
) -> None:
    args = (
        "--maximum-dead-containers-per-container", "1",
        "--minimum-container-ttl-duration", "0s",
        "--container-gc-period", "1s",
    )  # fmt: skip
    with tuned_node(control_plane, admin, registry, runtime_kind, args) as n:
        started = time.monotonic()
        crash = {
            "name": "c",
            "image": e2e_images.busybox,
            "command": ["sh", "-c", "echo ran; exit 3"],
        }
        created = admin.create("Pod", pod("crash", n, [crash]), "default")
        uid = created["metadata"]["uid"]
        logs = Path(n.base / "pods") / f"default_crash_{uid}" / "c"
        client = n.cri()
        seen_dead = 0

        def dead() -> list[cri.Container]:
            return [
                c
                for c in client.list_containers()
                if c.labels.get(POD_UID_LABEL) == uid
                and c.labels.get(CONTAINER_NAME_LABEL) == "c"
                and c.state == cri.CONTAINER_EXITED
            ]

        def second_run_over_first_gone() -> bool:
            nonlocal seen_dead
            gone = dead()
            seen_dead = max(seen_dead, len(gone))
            cs = container_status(admin, "crash")
            return (
                cs.get("restartCount", 0) >= 1
                and "terminated" in (cs.get("lastState") or {})
                and len(gone) == 1
                and not (logs / "0.log").exists()
                and (logs / "1.log").exists()
            )

        # The first run, then the second after the 10 s crash-loop backoff.
        wait_for(second_run_over_first_gone, timeout=60, interval=0.2, message="GC of run 0")
        took = time.monotonic() - started
        # The dead container kept is the newest one, and its log is readable.
        (kept,) = dead()
        assert client.container_status(kept.id).exit_code == 3
        assert "ran" in (logs / "1.log").read_text()
        # Never more than one dead container for long: GC runs every second.
        assert seen_dead <= 2, seen_dead
        print(f"{runtime_kind}: run 0 and its log removed {took:.1f}s after the pod was created")


def test_stopped_runtime_turns_node_not_ready(
    control_plane: ControlPlane,
    admin: GrpcApiClient,
    registry: Registry,
    e2e_images: E2EImages,
    runtime_kind: RuntimeKind,
) -> None:
    args = ("--pleg-unhealthy-threshold", "3s")
    with tuned_node(control_plane, admin, registry, runtime_kind, args) as n:
        pid = n.runtime_pid
        stopped = time.monotonic()
        os.kill(pid, signal.SIGSTOP)
        try:

            def not_ready() -> dict[str, Any]:
                c = node_ready(admin, n)
                return c if c.get("status") != "True" else {}

            cond = wait_for(not_ready, timeout=60, interval=0.2, message="node NotReady")
            took_down = time.monotonic() - stopped
        finally:
            os.kill(pid, signal.SIGCONT)
        assert "PLEG is not healthy" in cond.get("message", ""), cond
        # The threshold (3 s), then the next node status (every 10 s), with a margin.
        assert took_down < 18.0, f"NotReady {took_down:.1f}s after SIGSTOP"
        resumed = time.monotonic()
        wait_for(
            lambda: node_ready(admin, n).get("status") == "True",
            timeout=60,
            interval=0.2,
            message="node Ready again",
        )
        took_up = time.monotonic() - resumed
        assert n.agent is not None and n.agent.running()
        print(
            f"{runtime_kind}: NotReady {took_down:.1f}s after SIGSTOP, Ready {took_up:.1f}s after SIGCONT"
        )


def test_image_gc_removes_unused_keeps_used(
    control_plane: ControlPlane,
    admin: GrpcApiClient,
    registry: Registry,
    e2e_images: E2EImages,
    runtime_kind: RuntimeKind,
) -> None:
    # Any used disk is over a 1% high threshold; the low threshold 0 asks
    # for every unused image to go (a real disk never gets there).
    args = (
        "--image-gc-high-threshold", "1",
        "--image-gc-low-threshold", "0",
        "--image-minimum-gc-age", "0s",
        "--image-gc-period", "1s",
    )  # fmt: skip
    with tuned_node(control_plane, admin, registry, runtime_kind, args) as n:
        user = {"name": "c", "image": e2e_images.busybox, "command": ["sleep", "3600"]}
        admin.create("Pod", pod("user", n, [user]), "default")
        wait_running(admin, "user")
        client = n.cri()
        used = client.container_status(
            next(
                c.id
                for c in client.list_containers()
                if c.labels.get(CONTAINER_NAME_LABEL) == "c" and c.state == cri.CONTAINER_RUNNING
            )
        ).image_ref
        web = f"docker.io/{e2e_images.web}"
        pulled = client.pull_image(web)
        started = time.monotonic()

        def ids() -> set[str]:
            return {r for i in client.list_images() for r in (i.id, *i.repo_tags, *i.repo_digests)}

        wait_for(lambda: pulled not in ids(), timeout=30, interval=0.2, message="unused image GC")
        took = time.monotonic() - started
        left = client.list_images()
        assert any(used in (i.id, *i.repo_tags, *i.repo_digests) for i in left), (used, left)
        assert container_status(admin, "user").get("ready") is True
        print(f"{runtime_kind}: unused image removed {took:.1f}s after its pull")
