"""Real software on `skiff up` (issue 33): images built from Debian's own
packages (tests/harness/debian_images.py, mmdebstrap + umoci, cached
across runs), run unchanged: their users, entrypoints and stop signals.

- nginx-light serves its default page; its master runs as root (it binds
  :80 and writes /run/nginx.pid), its workers as www-data.
- redis-server, as the redis user, answers another pod through its Service
  name (cluster DNS).
- postgresql, as postgres, with its dynamic shared memory in /dev/shm:
  ready for pg_isready, then stopped by SIGTERM at the pod's deletion, it
  shuts down cleanly ("database system is shut down") within the grace
  period, never SIGKILLed.
- python3 with python3-kubernetes, as nobody: load_incluster_config() with
  the pod's ServiceAccount lists the pods of its namespace; /tmp is
  writable, /dev/shm is 64 MiB, the open-files limit is the runtime's.

Slow: the first build downloads and installs the packages (minutes); later
runs import the cached archive.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.agent.helpers import http_get
from tests.e2e.agent.kubelet_up import KUBECTL, Cluster, skiff_up
from tests.harness import debian_images as deb
from tests.harness.images import TestImages
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow, pytest.mark.debian_images]


@pytest.fixture(scope="module")
def cluster(images: TestImages) -> Iterator[Cluster]:
    why = deb.available()
    if why is not None:
        pytest.skip(why)
    built = deb.debian_images()
    with skiff_up(images, archives=(built.archive,)) as c:
        yield c


def ref(app: str) -> str:
    return next(a.ref for a in deb.APPS if a.name == app)


def app_pod(name: str, app: str, **spec: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": app, "image": ref(app), "imagePullPolicy": "Never"}
    c.update(spec.pop("container", {}))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {"containers": [c], **spec},
    }


def service(name: str, port: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"app": name}, "ports": [{"port": port, "targetPort": port}]}}  # fmt: skip


def processes(cluster: Cluster, pod: str) -> list[tuple[str, str]]:
    out = cluster.exec_read(pod, "ps", "-eo", "user:20,comm", "--no-headers")
    return [tuple(line.split(None, 1)) for line in out.splitlines() if line.strip()]  # type: ignore[misc]


def test_nginx_serves_with_its_workers_as_www_data(cluster: Cluster) -> None:
    cluster.api.create("Pod", app_pod("nginx", "nginx", container={"readinessProbe": {
        "httpGet": {"path": "/", "port": 80}, "periodSeconds": 1}}), "default")  # fmt: skip
    st = cluster.wait_ready("nginx", timeout=120)
    page = cluster.exec_read("nginx", "python3", "-c",
                             "import urllib.request as u; print(u.urlopen('http://127.0.0.1/').read().decode())")  # fmt: skip
    assert "Welcome to nginx" in page
    assert "Welcome to nginx" in http_get(f"http://{st['podIP']}/")
    procs = processes(cluster, "nginx")
    assert ("root", "nginx") in procs and ("www-data", "nginx") in procs, procs
    cluster.api.delete("Pod", "nginx", "default")


def test_redis_answers_another_pod_by_its_service_name(cluster: Cluster) -> None:
    cluster.api.create("Pod", app_pod("redis", "redis"), "default")
    cluster.api.create("Service", service("redis", 6379), "default")
    cluster.wait_phase("redis", "Running", timeout=120)
    assert ("redis", "redis-server") in processes(cluster, "redis")
    client = app_pod("redis-client", "redis", restartPolicy="Never", container={
        "command": ["sh", "-c", "until redis-cli -h redis ping; do sleep 0.5; done;"
                    " redis-cli -h redis set greeting hello && redis-cli -h redis get greeting"]})  # fmt: skip
    cluster.api.create("Pod", client, "default")
    cluster.wait_phase("redis-client", "Succeeded", timeout=90)
    out = cluster.kubectl("logs", "redis-client").stdout.split()
    assert out[-2:] == ["OK", "hello"], out
    for kind, name in (("Pod", "redis-client"), ("Pod", "redis"), ("Service", "redis")):
        cluster.api.delete(kind, name, "default")


def test_postgres_stops_cleanly_on_sigterm_within_the_grace_period(cluster: Cluster) -> None:
    pod = app_pod("pg", "postgres", terminationGracePeriodSeconds=30, container={
        "readinessProbe": {"exec": {"command": ["pg_isready", "-h", "127.0.0.1"]},
                           "periodSeconds": 1}})  # fmt: skip
    cluster.api.create("Pod", pod, "default")
    cluster.wait_ready("pg", timeout=120)
    assert ("postgres", "postgres") in processes(cluster, "pg")
    out = cluster.kubectl("exec", "pg", "--", "psql", "-h", "127.0.0.1", "-tAc", "select 40 + 2",
                          check=False)  # fmt: skip
    assert out.returncode == 0 or "password" in out.stderr, out.stderr  # reached the server
    follower = subprocess.Popen(
        [str(KUBECTL), "--kubeconfig", str(cluster.kubeconfig), "logs", "-f", "pg"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: cluster.kubectl("logs", "pg").stdout.count("\n") > 0, timeout=10,
                 interval=0.2, message="postgres' log")  # fmt: skip
        deleted = time.monotonic()
        cluster.api.delete("Pod", "pg", "default")
        log, _ = follower.communicate(timeout=40)
        took = time.monotonic() - deleted
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert "received smart shutdown request" in log, log
    assert "database system is shut down" in log, log
    assert took < 30, f"postgres took {took:.1f}s to stop"


RBAC: list[dict[str, Any]] = [
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
     "metadata": {"name": "pod-reader", "namespace": "default"},
     "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
     "metadata": {"name": "pod-reader", "namespace": "default"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
     "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]},
]  # fmt: skip
SCRIPT = """
import os, resource, shutil
from kubernetes import client, config
config.load_incluster_config()
pods = client.CoreV1Api().list_namespaced_pod("default")
print("pods:", " ".join(sorted(p.metadata.name for p in pods.items)))
open("/tmp/written", "w").write("ok")
print("shm:", shutil.disk_usage("/dev/shm").total)
print("nofile:", resource.getrlimit(resource.RLIMIT_NOFILE)[0])
print("uid:", os.getuid())
"""


def test_the_python_client_lists_pods_from_inside_a_pod(cluster: Cluster) -> None:
    for obj in RBAC:
        cluster.api.create(obj["kind"], obj, "default")
    pod = app_pod("py", "python", restartPolicy="Never",
                  container={"command": ["python3", "-c", SCRIPT]})  # fmt: skip
    cluster.api.create("Pod", pod, "default")
    st = cluster.wait_phase("py", "Succeeded", timeout=120)
    assert st["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    lines = dict(
        line.split(": ", 1) for line in cluster.kubectl("logs", "py").stdout.splitlines()
        if ": " in line
    )  # fmt: skip
    assert "py" in lines["pods"].split(), lines
    assert int(lines["shm"]) == 64 << 20, lines
    assert int(lines["nofile"]) >= 1024, lines
    assert lines["uid"] == "65534", lines  # nobody, the image's user
    cluster.api.delete("Pod", "py", "default")
