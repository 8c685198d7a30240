"""skiffctl rollout against a real `skiff controlplane` with the Deployment controller.

One control-plane process (SQLite, 127.0.0.1, temp dir) per module; the
Deployment and ReplicaSet controllers run in this process over gRPC/TLS
with the admin credential (the control plane does not start them itself
yet). Pods become ready the way an agent reports them (status updates).
skiffctl runs through `main()` with its real client factory, and once as a
real process for the exit status. Nothing sleeps.
"""

from __future__ import annotations

import copy
import io
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from controlplane.cli.main import main as skiffctl
from controlplane.client.apiclient import GrpcApiClient
from controlplane.controllers.config import ManagerConfig
from controlplane.controllers.manager import ControllerManager
from controlplane.controllers.rollout import REVISION
from machinery.rfc3339 import format_time
from tests.harness.controlplane import ControlPlane
from tests.harness.wait import wait_for

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[4]


@dataclass
class Done:
    code: int
    out: str
    err: str


@dataclass
class Env:
    cp: ControlPlane
    client: GrpcApiClient
    ns: str

    def ctl(self, *args: str, stdin: str = "") -> Done:
        out, err = io.StringIO(), io.StringIO()
        code = skiffctl(
            ["--config", str(self.cp.data_dir / "admin.conf"), "-n", self.ns, *args],
            stdout=out,
            stderr=err,
            stdin=io.StringIO(stdin),
        )
        return Done(code, out.getvalue(), err.getvalue())

    def pods(self) -> list[dict[str, Any]]:
        return [
            p
            for p in self.client.list("Pod", self.ns).items
            if not p["metadata"].get("deletionTimestamp")
        ]

    def make_ready(self) -> None:
        """Report every pod Running and Ready, as the agent would."""
        for i, pod in enumerate(self.pods()):
            conds = (pod.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds):
                continue
            body = copy.deepcopy(pod)
            now = format_time(time.time())
            body["status"] = {
                "phase": "Running",
                "podIP": f"10.244.1.{i + 2}",
                "startTime": now,
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
            }
            body["metadata"].pop("resourceVersion", None)
            try:
                self.client.update_status("Pod", body)
            except Exception:  # deleted meanwhile; the next round sees it gone
                continue

    def rolled_out(self, image: str, replicas: int = 3) -> Callable[[], bool]:
        def done() -> bool:
            self.make_ready()
            d = self.client.get("Deployment", "nginx", self.ns)
            st = d.get("status") or {}
            pods = self.pods()
            return (
                st.get("observedGeneration") == d["metadata"].get("generation")
                and st.get("updatedReplicas") == replicas
                and st.get("availableReplicas") == replicas
                and st.get("replicas") == replicas
                and len(pods) == replicas
                and all(p["spec"]["containers"][0]["image"] == image for p in pods)
            )

        return done

    def replicasets(self) -> dict[str, dict[str, Any]]:
        return {r["metadata"]["name"]: r for r in self.client.list("ReplicaSet", self.ns).items}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    cp = ControlPlane(Path(tmp_path_factory.mktemp("cp")) / "data", ["--store", "sqlite"])
    cp.start()
    manager: ControllerManager | None = None
    try:
        client = cp.client()
        client.create(
            "Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ro"}}
        )
        manager = ControllerManager(
            cp.client(), ManagerConfig(controllers=("deployment", "replicaset"))
        )
        manager.start_controllers(10.0)
        yield Env(cp, client, "ro")
    finally:
        if manager is not None:
            manager.stop_controllers()
        cp.close()


def nginx(image: str, cause: str = "") -> str:
    doc: dict[str, Any] = yaml.safe_load((REPO / "examples" / "nginx-deployment.yaml").read_text())
    doc["metadata"]["name"] = "nginx"
    if cause:
        doc["metadata"]["annotations"] = {"kubernetes.io/change-cause": cause}
    doc["spec"]["strategy"] = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
    }
    doc["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return yaml.safe_dump(doc)


def test_status_history_undo_pause_resume(env: Env) -> None:
    r = env.ctl("apply", "-f", "-", stdin=nginx("nginx:1.14.2", "first"))
    assert r.code == 0, r.err

    # rollout status follows the watch while pods become ready.
    result: list[Done] = []
    t = threading.Thread(
        target=lambda: result.append(env.ctl("rollout", "status", "deploy/nginx", "--timeout=60s"))
    )
    t.start()
    wait_for(lambda: env.rolled_out("nginx:1.14.2")() and not t.is_alive(), timeout=60)
    t.join(5)
    [status] = result
    assert status.code == 0, status.err
    assert status.out.endswith('deployment "nginx" successfully rolled out\n')
    [first_rs] = env.replicasets()

    r = env.ctl("apply", "-f", "-", stdin=nginx("nginx:1.16.1", "second"))
    assert r.code == 0, r.err
    wait_for(env.rolled_out("nginx:1.16.1"), timeout=60, message="rollout to 1.16.1")
    r = env.ctl("rollout", "status", "deployment/nginx")
    assert (r.code, r.out) == (0, 'deployment "nginx" successfully rolled out\n')

    r = env.ctl("rollout", "history", "deployment/nginx")
    assert r.code == 0, r.err
    assert r.out.splitlines()[:4] == [
        "deployment.apps/nginx ",
        "REVISION   CHANGE-CAUSE",
        "1          first",
        "2          second",
    ]
    r = env.ctl("rollout", "history", "deployment/nginx", "--revision=1")
    assert r.code == 0 and "nginx:1.14.2" in r.out

    # undo: back to revision 1's template; the controller reuses its ReplicaSet as revision 3.
    r = env.ctl("rollout", "undo", "deployment/nginx")
    assert (r.code, r.out) == (0, "deployment.apps/nginx rolled back\n"), r.err
    wait_for(env.rolled_out("nginx:1.14.2"), timeout=60, message="rollback to 1.14.2")
    rss = env.replicasets()
    assert len(rss) == 2
    assert rss[first_rs]["spec"]["replicas"] == 3
    wait_for(
        lambda: env.replicasets()[first_rs]["metadata"]["annotations"][REVISION] == "3",
        message="the old ReplicaSet to become revision 3",
    )
    d = env.client.get("Deployment", "nginx", env.ns)
    assert d["metadata"]["annotations"]["kubernetes.io/change-cause"] == "first"
    r = env.ctl("rollout", "history", "deployment/nginx")
    assert [ln.split()[0] for ln in r.out.splitlines()[2:] if ln] == ["2", "3"]

    r = env.ctl("rollout", "undo", "deployment/nginx", "--to-revision=3")
    assert "skipped rollback" in r.out
    r = env.ctl("rollout", "undo", "deployment/nginx", "--to-revision=2")
    assert r.code == 0
    wait_for(env.rolled_out("nginx:1.16.1"), timeout=60, message="undo to revision 2")

    # An unknown revision, as a user sees it from a real skiffctl process.
    p = subprocess.run(
        [
            sys.executable, str(REPO / "skiff.py"), "ctl",
            "--config", str(env.cp.data_dir / "admin.conf"),
            "-n", env.ns, "rollout", "undo", "deployment/nginx", "--to-revision", "42",
        ],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )  # fmt: skip
    assert (p.returncode, p.stderr) == (
        1,
        "error: unable to find specified revision 42 in history\n",
    )

    # pause: a template change makes no new ReplicaSet until resume.
    assert env.ctl("rollout", "pause", "deployment/nginx").out == "deployment.apps/nginx paused\n"
    before = set(env.replicasets())
    r = env.ctl("apply", "-f", "-", stdin=nginx("nginx:1.17.0"))
    assert r.code == 0, r.err
    wait_for(
        lambda: any(
            c.get("reason") == "DeploymentPaused"
            for c in (env.client.get("Deployment", "nginx", env.ns).get("status") or {}).get(
                "conditions", []
            )
        )
    )
    assert set(env.replicasets()) == before
    r = env.ctl("rollout", "status", "deployment/nginx", "--watch=false")
    assert r.code == 0 and "Waiting for deployment" in r.out
    assert env.ctl("rollout", "resume", "deployment/nginx").out == "deployment.apps/nginx resumed\n"
    wait_for(env.rolled_out("nginx:1.17.0"), timeout=60, message="rollout after resume")

    # restart: a new template annotation, hence a new ReplicaSet.
    assert env.ctl("rollout", "restart", "deployment/nginx").code == 0
    wait_for(lambda: len(env.replicasets()) == len(before) + 2, timeout=30)
    wait_for(env.rolled_out("nginx:1.17.0"), timeout=60, message="rollout after restart")
