"""Issue 31 on `skiff up`: the built-in ingress, ServiceLB and NetworkPolicy
enforcement, as a user gets them (tests/e2e/netcheck.py has the checks).

One `skiff up` per module, started as the side-by-side test starts it
(offline image import, its own ports, CIDRs and names), with the ingress on
ports of its own (`--ingress-http-port`, `--ingress-https-port`: never the
host's 80 and 443). Its agent restart is the user's: kill -9 of `skiff up`
and the same command again, which adopts the running pods. The ingress's
HAProxy runs only while an Ingress exists: none at rest, started by the
first (whose status a user's `kubectl wait` sees once it serves), stopped
with the last.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.cri_client import CRIClient
from tests.e2e import netcheck, netpolcheck
from tests.harness.images import TestImages
from tests.harness.kubectl import GO_ENV, NEWEST
from tests.harness.nodeprocs import free_service_cidrs, short_tempdir
from tests.harness.ports import free_port
from tests.harness.skiff_up import (
    IMAGE,
    NODE,
    Up,
    free_cluster_cidrs,
    offline_web_image,
)
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow]


def ingress_state(up: Up) -> str:
    """The built-in ingress's files (configuration, HAProxy's log), for a failure."""
    out = []
    for name in ("haproxy.cfg", "haproxy.log"):
        with contextlib.suppress(OSError):
            text = (up.layout.agent_root / "ingress" / name).read_text(errors="replace")[-3000:]
            out.append(f"--- ingress/{name}\n{text}")
    with contextlib.suppress(OSError):
        out.append(subprocess.run(["ls", "-la", str(up.layout.agent_root / "ingress")],
                                  capture_output=True, text=True, check=False).stdout)  # fmt: skip
    return "\n".join(out)


class UpScene:
    def __init__(self, up: Up, registries: Any) -> None:
        self.up = up
        self.registries = registries
        self.scene = netcheck.Scene(
            api=up.wait_ready(),
            image=IMAGE,
            nodes=[NODE],
            exec_in=self.exec_in,
            log_root=lambda node: up.layout.pod_logs,
            restart_agent=self.restart,
            pull_policy="Never",
            cri_of=lambda node: CRIClient(f"unix://{up.layout.cri_socket}", timeout=30),
        )

    def exec_in(self, pod: dict[str, Any], argv: list[str]) -> int:
        cri = CRIClient(f"unix://{self.up.layout.cri_socket}", timeout=30)
        try:
            labels = {"io.kubernetes.pod.name": pod["metadata"]["name"],
                      "io.kubernetes.pod.namespace": pod["metadata"]["namespace"]}  # fmt: skip
            running = [c for c in cri.list_containers(labels) if c.state == 1]
            assert running, f"no running container of {pod['metadata']['name']}"
            return int(cri.exec_sync(running[0].id, argv, 10).exit_code)
        finally:
            cri.close()

    def restart(self, node: str) -> None:
        """kill -9 `skiff up`, then the same command: it adopts its pods."""
        up = self.up
        assert up.daemon is not None
        self.scene.api.close()
        up.daemon.stop(signal.SIGKILL)
        up.admin_conf.unlink()  # written again once the node is Ready
        up.start(self.registries)
        self.scene.api = up.wait_ready(timeout=180)


@pytest.fixture(scope="module")
def up_scene(images: TestImages) -> Iterator[UpScene]:
    base = short_tempdir("sknet-")
    up = Up("net", base / "net", free_cluster_cidrs(1)[0], free_service_cidrs(1)[0])
    try:
        archive, registries = offline_web_image(base, images)
        up.data_dir.mkdir()
        up.import_image(archive)
        up.start(registries)
        scene = UpScene(up, registries)
        yield scene
        scene.scene.api.close()
    except BaseException:
        sys.stderr.write(up.log_tail() + "\n")
        raise
    finally:
        try:
            up.cleanup()
        finally:
            shutil.rmtree(base, ignore_errors=True)


def haproxy_pids(up: Up) -> list[int]:
    """The HAProxy processes (master and workers) of this instance's ingress."""
    config = str(up.layout.agent_root / "ingress" / "haproxy.cfg").encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[0].endswith(b"haproxy") and config in argv:
            found.append(int(proc.name))
    return found


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def test_no_haproxy_until_the_first_ingress_and_after_the_last(up_scene: UpScene) -> None:
    """`skiff up` at rest runs no HAProxy; the first Ingress starts it, and
    `kubectl wait` on its status returns once it serves; the last one's
    deletion stops it."""
    up, scene = up_scene.up, up_scene.scene
    api = scene.api
    try:
        # Nothing serves while no Ingress exists (another test's last one
        # went: HAProxy follows it).
        wait_for(lambda: not haproxy_pids(up), timeout=30, interval=0.2,
                 message="no HAProxy without an Ingress")  # fmt: skip
        assert refused(up.http_port) and refused(up.https_port)
        node = api.get("Node", NODE)
        assert "ingress.skiff.io/ports" not in (node["metadata"].get("annotations") or {})

        scene.create("Pod", netcheck.pod(scene, "first", {"app": "first"}, NODE,
                                         netcheck.serve("first")), "default")  # fmt: skip
        scene.create("Service", netcheck.service("first", 80, {"app": "first"}), "default")
        path = {"path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": "first", "port": {"number": 80}}}}  # fmt: skip
        scene.create("Ingress", {
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "first", "namespace": "default"},
            "spec": {"rules": [{"host": "first.test", "http": {"paths": [path]}}]},
        }, "default")  # fmt: skip
        # A user's wait on the status: once it returns, the address answers.
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "KUBECONFIG": str(up.data_dir / "kubeconfig"), "HOME": str(up.data_dir.parent),
               **GO_ENV}  # fmt: skip
        done = subprocess.run(
            [str(NEWEST), "wait", "--for=jsonpath={.status.loadBalancer.ingress}",
             "ingress/first", "--timeout=60s"],
            capture_output=True, text=True, env=env, timeout=90, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        [ip] = netcheck.node_addresses(api, [NODE])
        assert netcheck.http_get(ip, up.http_port, "/", host="other.test")[0] == 404
        assert haproxy_pids(up)  # its master and worker(s)
        netcheck.running(api, "first", "default")
        wait_for(netcheck.answers(lambda: netcheck.http_get(ip, up.http_port, "/", "first.test"),
                                  (200, "first")),
                 timeout=60, interval=0.3, message="first.test served")  # fmt: skip

        # The last Ingress gone: HAProxy stops and the ports close.
        api.delete("Ingress", "first", "default")
        wait_for(lambda: not haproxy_pids(up), timeout=30, interval=0.2,
                 message="HAProxy stopped with the last Ingress")  # fmt: skip
        assert refused(up.http_port) and refused(up.https_port)
        node = api.get("Node", NODE)
        assert "ingress.skiff.io/ports" not in (node["metadata"].get("annotations") or {})
    except BaseException:
        sys.stderr.write(up.log_tail() + "\n" + ingress_state(up) + "\n")
        raise
    finally:
        scene.cleanup()


def test_ingress_without_class_and_a_load_balancer_service(up_scene: UpScene) -> None:
    scene = up_scene.scene
    try:
        netcheck.check_ingress_and_load_balancer(
            scene, up_scene.up.http_port, up_scene.up.https_port, free_port()
        )
    except BaseException:
        sys.stderr.write(up_scene.up.log_tail() + "\n" + ingress_state(up_scene.up) + "\n")
        raise
    finally:
        scene.cleanup()


def test_network_policies_enforced_through_a_restart(up_scene: UpScene) -> None:
    scene = up_scene.scene
    try:
        netcheck.check_network_policies(scene)
    except BaseException:
        sys.stderr.write(up_scene.up.log_tail() + "\n" + ingress_state(up_scene.up) + "\n")
        raise
    finally:
        scene.cleanup()


def test_network_policy_variants_with_live_traffic(up_scene: UpScene) -> None:
    scene = up_scene.scene
    try:
        netpolcheck.check_policy_variants(scene)
    except BaseException:
        sys.stderr.write(up_scene.up.log_tail() + "\n")
        raise
    finally:
        scene.cleanup()


def test_local_service_answers_a_client_on_the_node(up_scene: UpScene) -> None:
    scene = up_scene.scene
    try:
        netpolcheck.check_local_keeps_source(scene, free_port(), client_outside=False)
    except BaseException:
        sys.stderr.write(up_scene.up.log_tail() + "\n")
        raise
    finally:
        scene.cleanup()


def test_network_policy_sctp_with_live_traffic(up_scene: UpScene) -> None:
    if not netpolcheck.sctp_supported():
        pytest.skip(
            "this kernel has no SCTP (no sctp module): SCTP rules are checked in unit tests"
        )
    scene = up_scene.scene
    try:
        netpolcheck.check_sctp_policy(scene)
    finally:
        scene.cleanup()
