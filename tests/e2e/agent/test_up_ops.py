"""Operations on a running `skiff up` (issue 34): certificates rotated with the agent
and kubectl going on, and a data dir of the older format upgraded in place with its
pod still running (the agent adopts it across the restart)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509

from controlplane.datadir import STORAGE_FORMAT
from tests.e2e.agent.test_up_lifecycle import serve_web, skiff
from tests.harness.images import TestImages
from tests.harness.images.catalog import WEB_BODY
from tests.harness.kubectl import GO_ENV, NEWEST
from tests.harness.nodeprocs import free_service_cidrs, short_tempdir
from tests.harness.skiff_up import (
    NODE,
    Up,
    free_cluster_cidrs,
    http_get,
    offline_web_image,
    running_ip,
    web_pod,
)
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow]


class One:
    def __init__(self, base: Path, archive: Path, registries: Path) -> None:
        cluster, service = free_cluster_cidrs(1)[0], free_service_cidrs(1)[0]
        self.up = Up("ops", base / "ops", cluster, service)
        self.registries = registries
        self.up.data_dir.mkdir()
        self.up.import_image(archive)


@pytest.fixture
def one(images: TestImages) -> Iterator[One]:
    base = short_tempdir("skop-")
    archive, registries = offline_web_image(base, images)
    o = One(base, archive, registries)
    try:
        yield o
    except BaseException:
        sys.stderr.write(o.up.log_tail() + "\n")
        raise
    finally:
        try:
            o.up.cleanup()
        finally:
            shutil.rmtree(base, ignore_errors=True)


def kubectl(up: Up, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(up.data_dir / "kubeconfig"), **GO_ENV}
    return subprocess.run([str(NEWEST), *argv], env=env, capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip


def served_serial(port: int) -> int:
    pem = ssl.get_server_certificate(("127.0.0.1", port), timeout=5)
    return x509.load_pem_x509_certificate(pem.encode()).serial_number


def test_certificates_rotated_on_a_running_cluster_agents_and_kubectl_go_on(one: One) -> None:
    up = one.up
    api, pod_ip, _ = serve_web(up, one.registries)
    cp_dir = up.data_dir / "controlplane"
    before = served_serial(up.api_port)
    assert kubectl(up, "get", "pods", "-o", "name").stdout.strip() == "pod/web"

    res = skiff("certificate", "rotate", "--service", "api-server", "--data-dir", str(cp_dir))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "certificate server.crt rotated" in res.stdout
    on_disk = x509.load_pem_x509_certificate((cp_dir / "pki" / "server.crt").read_bytes())
    assert on_disk.serial_number != before
    # The running server hands out the new certificate at the next handshake.
    wait_for(lambda: served_serial(up.api_port) == on_disk.serial_number, timeout=10,
             message="the rotated serving certificate served")  # fmt: skip
    # kubectl (a new connection, checking the CA and the name) goes on, no restart.
    got = kubectl(up, "get", "pods", "-o", "name")
    assert got.returncode == 0 and got.stdout.strip() == "pod/web", got.stderr
    logs = kubectl(up, "logs", "web")  # API server -> agent, and back
    assert logs.returncode == 0, logs.stderr
    # The agent goes on: a new pod is started and reported Running through the API.
    second = web_pod()
    second["metadata"] = {**second["metadata"], "name": "web2", "labels": {"app": "web2"}}
    api.create("Pod", second)
    wait_for(lambda: (api.get("Pod", "web2", "default").get("status") or {}).get("phase")
             == "Running", timeout=60, message="web2 Running after the rotation")  # fmt: skip
    node = api.get("Node", NODE)
    assert {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True"
    assert http_get(pod_ip) == WEB_BODY
    assert up.daemon is not None and up.daemon.running()  # never restarted
    api.close()


def test_an_older_data_dir_is_upgraded_in_place_with_its_pod_running(one: One) -> None:
    up = one.up
    api, pod_ip, svc = serve_web(up, one.registries)
    uid = api.get("Pod", "web", "default")["metadata"]["uid"]
    api.close()
    cp_dir = up.data_dir / "controlplane"
    assert json.loads((cp_dir / "version.json").read_text())["storageFormat"] == STORAGE_FORMAT
    # The upgrade: stop (the pod keeps running in its shim), put the older
    # format in place (no version record), start the new code on the same data dir.
    assert up.daemon is not None
    up.daemon.stop(signal.SIGKILL)
    up.daemon = None
    (cp_dir / "version.json").unlink()
    assert http_get(pod_ip) == WEB_BODY  # running while no skiff runs
    up.admin_conf.unlink()  # written again once the node is Ready
    up.start(one.registries)
    api = up.wait_ready()
    try:
        assert json.loads((cp_dir / "version.json").read_text())["storageFormat"] == STORAGE_FORMAT
        assert (
            "data directory migrated from storage format 1"
            in (up.layout.log_dir / "controlplane.log").read_text()
        )
        pod = api.get("Pod", "web", "default")
        assert pod["metadata"]["uid"] == uid and running_ip(api) == pod_ip
        for ip in (pod_ip, svc):
            assert http_get(ip) == WEB_BODY
    finally:
        api.close()
