"""The control plane's components act as themselves, never as the admin (issue 16).

A real control plane (in this process, its components as threads, SQLite
in a temp dir) with one hollow node: a Deployment goes through the
controller manager and the default scheduler, a Volcano Job through the
controllers and the batch scheduler, and the audit log names who made each
write. The components'
kubeconfigs in the data directory are 0600 and hold credentials their
roles bound: the scheduler reads no Secret and deletes no Namespace, the
controller manager cannot bind itself to cluster-admin. On the old code
every component wrote as "admin" and no such kubeconfig existed.
"""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.hollow import HollowConfig, HollowNodes
from controlplane import main as cp_main
from controlplane.api import volcano
from controlplane.apiserver.rbaccomponents import (
    BATCH_SCHEDULER,
    COMPONENTS,
    CONTROLLER_MANAGER,
    SCHEDULER,
)
from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.config import load_config
from controlplane.client.errors import Forbidden, NotFound
from tests.fakes.volcano_examples import example_job
from tests.harness.controlplane import REPO, ControlPlane
from tests.harness.hollow import wait_schedulable
from tests.harness.registry import stop_process
from tests.harness.wait import wait_for

pytestmark = pytest.mark.slow
RBAC = "rbac.authorization.k8s.io"


@dataclass
class Plane:
    running: cp_main.RunningControlPlane
    admin: GrpcApiClient
    audit: Path

    def as_component(self, kubeconfig: str) -> GrpcApiClient:
        return connect(load_config(self.running.data_dir / kubeconfig), timeout=10)

    def writers(self, verb: str, resource: str, subresource: str = "") -> set[str]:
        return writers(self.audit, verb, resource, subresource)


def writers(audit: Path, verb: str, resource: str, subresource: str = "") -> set[str]:
    """Who did `verb` on `resource` (successfully), by the audit log."""
    found = set()
    for line in audit.read_text().splitlines():
        event = json.loads(line)
        ref = event.get("objectRef") or {}
        if (
            event["verb"] == verb
            and ref.get("resource") == resource
            and ref.get("subresource", "") == subresource
            and event["responseStatus"]["code"] < 300
        ):
            found.add(event["user"]["username"])
    return found


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    base = tmp_path_factory.mktemp("identities")
    audit = base / "audit.log"
    args = cp_main.build_parser().parse_args(
        ["--listen", "127.0.0.1:0", "--data-dir", str(base / "cp"),
         "--audit-log-path", str(audit), "--controllers", "*,-podgc",
         "--no-component-processes"]  # threads here; test_component_processes.py: processes
    )  # fmt: skip
    running = cp_main.start(args)
    admin = connect(running.admin, timeout=30)
    nodes = HollowNodes(admin, HollowConfig(nodes=1, cpu="8", memory="16Gi", prefix="idn"))
    try:
        nodes.start()
        wait_schedulable(admin, 1)
        yield Plane(running, admin, audit)
    finally:
        nodes.stop()
        admin.close()
        running.stop()


def deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }


def test_each_component_writes_as_itself(plane: Plane) -> None:
    components_write_as_themselves(plane.admin, plane.audit)


def components_write_as_themselves(api: GrpcApiClient, audit: Path) -> None:
    """A Deployment's pod bound by the default scheduler and a Volcano Job's
    pods by the batch scheduler (a node with room being there); the audit log
    `audit` names each component for its writes, never the admin."""
    api.create("Deployment", deployment("web"), "default")

    def bound() -> bool:
        pods = api.list("Pod", "default").items
        return any(p["spec"].get("nodeName") for p in pods if p["metadata"]["name"][:4] == "web-")

    wait_for(bound, timeout=30, message="the Deployment's pod bound")
    api.create(volcano.JOB_KEY, example_job("idjob", replicas=2, min_available=2), "default")

    def batch_bound() -> bool:
        pods = api.list("Pod", "default").items
        ours = [p for p in pods if (p["metadata"].get("labels") or {}).get(volcano.JOB_NAME)]
        return len(ours) == 2 and all(p["spec"].get("nodeName") for p in ours)

    wait_for(batch_bound, timeout=30, message="the Volcano Job's pods bound")
    # Audit lines are written as each request completes, a moment after its effect shows.
    for verb, resource, sub, users in (
        ("create", "replicasets", "", {CONTROLLER_MANAGER.user}),
        ("create", "pods", "", {CONTROLLER_MANAGER.user}),
        ("create", "pods", "binding", {SCHEDULER.user, BATCH_SCHEDULER.user}),
        # The batch scheduler writes PodGroup and Queue status after its session.
        ("patch", "podgroups", "status", {BATCH_SCHEDULER.user}),
        ("patch", "queues", "status", {BATCH_SCHEDULER.user}),
    ):
        wait_for(lambda a=(verb, resource, sub), u=users: writers(audit, *a) == u,  # type: ignore[misc]
                 timeout=30, message=f"{verb} {resource}/{sub} by {users} only")  # fmt: skip
    # The admin wrote only what this test asked for.
    assert "admin" not in writers(audit, "create", "pods", "binding")


def test_kubeconfigs_are_private_and_name_their_user(plane: Plane) -> None:
    admin_token = plane.running.admin.token
    for c in COMPONENTS:
        path = plane.running.data_dir / c.kubeconfig
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        doc = yaml.safe_load(path.read_text())
        assert doc["users"][0]["name"] == c.user
        assert doc["users"][0]["user"]["token"] != admin_token


def test_scheduler_is_refused_outside_its_role(plane: Plane) -> None:
    plane.admin.create("Namespace", {"metadata": {"name": "keep"}})
    plane.admin.create("Secret", {"metadata": {"name": "s1"}, "stringData": {"k": "v"}}, "keep")
    for kubeconfig in (SCHEDULER.kubeconfig, BATCH_SCHEDULER.kubeconfig):
        with plane.as_component(kubeconfig) as sched:
            assert sched.list("Node").items  # inside its role
            with pytest.raises(Forbidden, match='cannot get resource "secrets"'):
                sched.get("Secret", "s1", "keep")
            with pytest.raises(Forbidden, match='cannot list resource "secrets"'):
                sched.list("Secret", "keep")
            with pytest.raises(Forbidden, match='cannot delete resource "namespaces"'):
                sched.delete("Namespace", "keep")
            with pytest.raises(Forbidden, match='cannot create resource "deployments"'):
                sched.create("Deployment", deployment("nope"), "default")
            # Its own Lease only: it cannot take over the controller manager's.
            with pytest.raises(Forbidden, match='cannot get resource "leases"'):
                sched.get("Lease", "skiff-controller-manager", "kube-system")
    assert "deletionTimestamp" not in plane.admin.get("Namespace", "keep")["metadata"]


def test_controller_manager_cannot_make_itself_cluster_admin(plane: Plane) -> None:
    me = {"apiGroup": RBAC, "kind": "User", "name": CONTROLLER_MANAGER.user}
    escalate: dict[str, Any] = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "kcm-admin"},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [me],
    }
    with plane.as_component(CONTROLLER_MANAGER.kubeconfig) as kcm:
        with pytest.raises(Forbidden, match='cannot create resource "clusterrolebindings"'):
            kcm.create("ClusterRoleBinding", escalate)
        # Nor by adding itself to the existing binding of cluster-admin ...
        held = kcm.get("ClusterRoleBinding", "cluster-admin")
        held["subjects"].append(me)
        with pytest.raises(Forbidden, match="may not bind"):
            kcm.update("ClusterRoleBinding", held)
        # ... nor by widening its own role (escalate covers the aggregated roles only).
        role = kcm.get("ClusterRole", CONTROLLER_MANAGER.roles[0])
        role["rules"].append({"apiGroups": [RBAC], "resources": ["clusterrolebindings"],
                              "verbs": ["create"]})  # fmt: skip
        with pytest.raises(Forbidden, match="escalation"):
            kcm.update("ClusterRole", role)
    binding = plane.admin.get("ClusterRoleBinding", "cluster-admin")
    assert CONTROLLER_MANAGER.user not in [s["name"] for s in binding["subjects"]]
    assert (
        len(plane.admin.get("ClusterRole", CONTROLLER_MANAGER.roles[0])["rules"])
        == len(role["rules"]) - 1
    )


def test_each_component_runs_alone_with_its_kubeconfig(tmp_path: Path) -> None:
    """`skiff controlplane` with no schedulers and no controllers; each runs as
    a process of its own with `--kubeconfig` (kube-scheduler's and
    kube-controller-manager's flag) and acts as its own user."""
    cp = ControlPlane(tmp_path / "cp", ["--disable", "scheduler", "--disable", "volcano-scheduler",
                                        "--disable", "controllers"])  # fmt: skip
    cp.start()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        log = (tmp_path / "components.log").open("ab")
        for module, c in (("controlplane.scheduler.run", SCHEDULER),
                          ("controlplane.scheduler.batch.run", BATCH_SCHEDULER),
                          ("controlplane.controllers.manager", CONTROLLER_MANAGER)):  # fmt: skip
            argv = [sys.executable, "-m", module, "--kubeconfig", str(cp.data_dir / c.kubeconfig)]
            procs.append(subprocess.Popen(argv, cwd=REPO, stdout=log, stderr=log))
        log.close()
        admin = cp.client()
        for name, c in (("skiff-scheduler", SCHEDULER), ("volcano", BATCH_SCHEDULER),
                        ("skiff-controller-manager", CONTROLLER_MANAGER)):  # fmt: skip
            wait_for(lambda name=name: lease_holder(admin, name), timeout=60,  # type: ignore[misc]
                     message=f"{c.component} holds its Lease")  # fmt: skip
            with cp.client(c.kubeconfig) as own:
                assert own.whoami()["user"] == c.user
        admin.create("Node", {"metadata": {"name": "alone"}, "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}]}})  # fmt: skip
        admin.create("Deployment", deployment("solo"), "default")

        def bound() -> bool:
            pods = admin.list("Pod", "default").items
            return any(p["spec"].get("nodeName") == "alone" for p in pods)

        wait_for(
            bound, timeout=60, message="the controller manager made a pod, the scheduler bound it"
        )
    finally:
        for proc in procs:
            stop_process(proc, timeout=20)
        cp.close()


def lease_holder(api: GrpcApiClient, name: str) -> str:
    try:
        return str(api.get("Lease", name, "kube-system")["spec"].get("holderIdentity") or "")
    except NotFound:
        return ""


def test_a_component_without_a_kubeconfig_refuses_to_start(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "controlplane.scheduler.batch.run", "--kubeconfig",
         str(tmp_path / "missing.conf")],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--kubeconfig" in done.stderr and "missing.conf" in done.stderr
