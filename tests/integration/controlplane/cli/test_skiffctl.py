"""skiffctl against a real control plane: `skiff controlplane` as a real process.

One control plane per module (temp --data-dir, 127.0.0.1 on a free port,
stopped by its pid). skiffctl runs in-process through `main()` with its real
client factory (credential file, gRPC, TLS, token) for most calls, and as a
real process (`skiff ctl --config <data-dir>/admin.conf ...`) where the exit
status and streams as a user sees them are the point (errors, usage,
--server, -w).
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from controlplane.cli.main import main
from tests.harness.ports import free_port
from tests.harness.wait import wait_for

pytestmark = pytest.mark.slow  # a real control plane and some skiffctl processes

ROOT = Path(__file__).resolve().parents[4]
SKIFF = [sys.executable, str(ROOT / "skiff.py")]


@dataclass
class Done:
    code: int
    out: str
    err: str


@dataclass
class Cluster:
    server: str
    config: Path
    proc: subprocess.Popen[bytes]
    log: Path

    def ctl(self, *args: str, stdin: str = "") -> Done:
        """skiffctl in this process, through the real credential file and gRPC client."""
        out, err = io.StringIO(), io.StringIO()
        code = main(
            ["--config", str(self.config), *args],
            stdout=out,
            stderr=err,
            stdin=io.StringIO(stdin),
        )
        return Done(code, out.getvalue(), err.getvalue())

    def ctl_process(self, *args: str, stdin: str = "", timeout: float = 60) -> Done:
        """skiffctl as a separate process (`skiff ctl ...`)."""
        p = subprocess.run(
            [*SKIFF, "ctl", "--config", str(self.config), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
        )
        return Done(p.returncode, p.stdout, p.stderr)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    data = tmp_path_factory.mktemp("controlplane")
    port = free_port()
    log = data / "controlplane.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [*SKIFF, "controlplane", "--listen", f"127.0.0.1:{port}", "--data-dir", str(data)],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    c = Cluster(f"127.0.0.1:{port}", data / "admin.conf", proc, log)
    try:

        def up() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"control plane exited {proc.returncode}: {log.read_text()}")
            return c.config.exists() and c.ctl("get", "namespaces").code == 0

        try:
            wait_for(up, timeout=60, interval=0.2, message="the control plane to serve")
        except AssertionError as err:
            if proc.poll() is not None:
                raise
            raise AssertionError(f"{err}\n{log.read_text()}") from err
        yield c
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(5)


DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: busybox}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
"""


def test_apply_create_unchanged_configured(cluster: Cluster, tmp_path: Path) -> None:
    f = tmp_path / "web.yaml"
    f.write_text(DEPLOY)
    r = cluster.ctl("apply", "-f", str(f))
    assert r.code == 0, r.err
    assert r.out == "deployment.apps/web created\nservice/web created\n"
    r = cluster.ctl("apply", "-f", str(f))
    assert r.out == "deployment.apps/web unchanged\nservice/web unchanged\n", r.err
    r = cluster.ctl("apply", "-f", "-", stdin=DEPLOY.replace("replicas: 2", "replicas: 3"))
    assert r.out == "deployment.apps/web configured\nservice/web unchanged\n", r.err
    got = yaml.safe_load(cluster.ctl("get", "deploy", "web", "-o", "yaml").out)
    assert got["spec"]["replicas"] == 3 and got["metadata"]["resourceVersion"]


def test_get_table_names_and_json(cluster: Cluster) -> None:
    cluster.ctl("apply", "-f", "-", stdin=DEPLOY)
    r = cluster.ctl("get", "deployments")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert [ln.split()[0] for ln in lines[1:]] == ["web"]
    # `kubernetes` is the API server's own Service in default, as on Kubernetes.
    assert cluster.ctl("get", "deploy,svc", "-o", "name").out.splitlines() == [
        "deployment.apps/web",
        "service/kubernetes",
        "service/web",
    ]
    listed = json.loads(cluster.ctl("get", "svc", "-o", "json").out)
    assert listed["kind"] == "List"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["kubernetes", "web"]
    r = cluster.ctl("get", "ns")
    assert "default" in r.out.split()


def test_errors_and_exit_codes(cluster: Cluster) -> None:
    r = cluster.ctl_process("get", "gizmos")
    assert r.code == 1 and 'resource type "gizmos"' in r.err and "Deployment" in r.err
    r = cluster.ctl_process("get", "pod", "no-such-pod")
    assert r.code == 1 and r.err.startswith("Error from server (NotFound)")
    assert cluster.ctl_process("get", "pods", "--no-such-flag").code == 2
    assert cluster.ctl_process("frobnicate").code == 2
    bad = (
        DEPLOY.split("---")[0]
        .replace("replicas: 2", "replicas: -1")
        .replace("name: web", "name: bad")
    )
    r = cluster.ctl_process("apply", "-f", "-", stdin=bad)
    assert r.code == 1 and "spec.replicas" in r.err
    assert cluster.ctl_process("get", "deploy", "bad").code == 1  # nothing stored


def test_scale_patch_describe(cluster: Cluster) -> None:
    cluster.ctl("apply", "-f", "-", stdin=DEPLOY)
    r = cluster.ctl("scale", "deploy/web", "--replicas", "5")
    assert (r.code, r.out) == (0, "deployment.apps/web scaled\n"), r.err
    r = cluster.ctl("patch", "deploy", "web", "-p", '{"metadata":{"labels":{"tier":"fe"}}}')
    assert (r.code, r.out) == (0, "deployment.apps/web patched\n"), r.err
    got = json.loads(cluster.ctl("get", "deploy", "web", "-o", "json").out)
    assert got["spec"]["replicas"] == 5 and got["metadata"]["labels"]["tier"] == "fe"
    r = cluster.ctl("get", "deploy", "-l", "tier=fe", "-o", "name")
    assert r.out == "deployment.apps/web\n"
    r = cluster.ctl("describe", "deployment", "web")
    assert r.code == 0 and "Replicas:" in r.out and "5 desired" in r.out


def test_nodes_cordon_uncordon(cluster: Cluster) -> None:
    node = "apiVersion: v1\nkind: Node\nmetadata: {name: cli-node-1}\n"
    assert cluster.ctl("apply", "-f", "-", stdin=node).code == 0
    r = cluster.ctl("cordon", "cli-node-1")
    assert (r.code, r.out) == (0, "node/cli-node-1 cordoned\n"), r.err
    r = cluster.ctl("get", "no", "cli-node-1")
    assert "SchedulingDisabled" in r.out
    assert cluster.ctl("uncordon", "cli-node-1").out == "node/cli-node-1 uncordoned\n"


def test_delete_forms(cluster: Cluster, tmp_path: Path) -> None:
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg-%d}\ndata: {a: b}\n"
    for i in range(3):
        assert cluster.ctl("apply", "-f", "-", stdin=cm % i).code == 0
    assert cluster.ctl("delete", "configmap", "cfg-0").out == 'configmap "cfg-0" deleted\n'
    assert cluster.ctl("delete", "cm/cfg-1").out == 'configmap "cfg-1" deleted\n'
    f = tmp_path / "cm.yaml"
    f.write_text(cm % 2)
    assert cluster.ctl("delete", "-f", str(f)).out == 'configmap "cfg-2" deleted\n'
    r = cluster.ctl("get", "cm", "cfg-2")
    assert r.code == 1 and "NotFound" in r.err


def test_watch_prints_changes(cluster: Cluster) -> None:
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: watched}\ndata: {v: '%d'}\n"
    cluster.ctl("apply", "-f", "-", stdin=cm % 0)
    proc = subprocess.Popen(
        [
            *SKIFF,
            "ctl",
            "--config",
            str(cluster.config),
            "get",
            "cm",
            "watched",
            "-w",
            "-o",
            "name",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    lines: list[str] = []
    assert proc.stdout is not None
    stdout = proc.stdout
    reader = threading.Thread(target=lambda: lines.extend(iter(stdout.readline, "")), daemon=True)
    reader.start()
    try:
        wait_for(lambda: len(lines) >= 1, timeout=30, message="the initial listing")

        def changed() -> bool:
            # the watch may open just after our first write; keep writing until seen
            cluster.ctl("apply", "-f", "-", stdin=cm % (len(lines) + 10))
            return len(lines) >= 2

        wait_for(changed, timeout=30, interval=0.5, message="a watch event")
        assert set(lines) == {"configmap/watched\n"}
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(10)


def test_server_override_and_unreachable_server(cluster: Cluster) -> None:
    r = cluster.ctl_process("--server", cluster.server, "get", "ns", "default", "-o", "name")
    assert (r.code, r.out) == (0, "namespace/default\n"), r.err
    dead = f"127.0.0.1:{free_port()}"
    r = cluster.ctl_process("--server", dead, "get", "ns", timeout=90)
    assert r.code == 1 and r.err.startswith("Unable to connect to the server"), r.err


def test_label_status_patch_wait_and_jsonpath(cluster: Cluster) -> None:
    pod = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: waiter}\n"
        "spec: {containers: [{name: c, image: busybox}]}\n"
    )
    assert cluster.ctl("apply", "-f", "-", stdin=pod).code == 0
    assert cluster.ctl("label", "pod", "waiter", "stage=one").out == "pod/waiter labeled\n"
    r = cluster.ctl("get", "pods", "-l", "stage=one", "-o", "jsonpath={.items[*].metadata.name}")
    assert r.out == "waiter", r.err
    r = cluster.ctl("wait", "pod/waiter", "--for=condition=Ready", "--timeout=0")
    assert r.code == 1 and "timed out waiting for the condition on pods/waiter" in r.err
    ready = '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}'
    r = cluster.ctl("patch", "pod", "waiter", "--subresource", "status", "-p", ready)
    assert r.code == 0, r.err
    r = cluster.ctl("wait", "pod/waiter", "--for=condition=Ready", "--timeout=20s")
    assert (r.code, r.out) == (0, "pod/waiter condition met\n"), r.err
    assert "pods" in cluster.ctl("api-resources", "-o", "name").out.split()
    assert "pod/waiter" in cluster.ctl("get", "all", "-o", "name").out.split()


def test_delete_namespace_waits_for_its_contents(cluster: Cluster) -> None:
    assert cluster.ctl("create", "namespace", "doomed").out == "namespace/doomed created\n"
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: inside, namespace: doomed}\n"
    assert cluster.ctl("apply", "-f", "-", stdin=cm).code == 0
    r = cluster.ctl("delete", "ns", "doomed", "--timeout", "30")
    assert (r.code, r.out) == (0, 'namespace "doomed" deleted\n'), r.err
    assert cluster.ctl("get", "ns", "doomed").code == 1
    assert cluster.ctl("get", "cm", "-n", "doomed", "-o", "name").out == ""
