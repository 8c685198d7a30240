"""`skiff controlplane --disable metrics-server` (k3s' name; `skiff up`
passes it on): the metrics API built in is not served, so the cluster looks
as a kind cluster does, with no metrics-server. Through kubectl 1.33 by its
versioned path: no metrics.k8s.io in `kubectl api-resources` (one resource
named pods, which kr8s' own e2e suite asks for), no APIService
v1beta1.metrics.k8s.io (a disabled addon's objects are deleted, as k3s'
deploy controller deletes them), 404 for the group, and `kubectl top`
saying what it says on a cluster without metrics-server; the same data
directory started without the switch served all of it. A namespace is
still deleted with its contents."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.controlplane import ControlPlane
from tests.harness.kubectl import GO_ENV, NEWEST
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.skipif(not NEWEST.exists(), reason=f"{NEWEST} is not installed")]

APISERVICE = "v1beta1.metrics.k8s.io"


@pytest.fixture
def control_plane(tmp_path: Path) -> Iterator[ControlPlane]:
    cp = ControlPlane(tmp_path / "cp")
    try:
        yield cp
    finally:
        cp.close()


def kubectl(cp: ControlPlane, *args: str) -> subprocess.CompletedProcess[str]:
    home = cp.data_dir.parent / "home"  # kubectl's discovery cache, none shared
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "KUBECONFIG": str(cp.data_dir / "kubeconfig"), **GO_ENV}  # fmt: skip
    return subprocess.run([str(NEWEST), *args], capture_output=True, text=True, timeout=60,
                          env=env, check=False)  # fmt: skip


def resources(cp: ControlPlane) -> list[str]:
    done = kubectl(cp, "api-resources", "-o", "name")
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def apiservice_exists(cp: ControlPlane) -> bool:
    done = kubectl(cp, "get", "apiservice", APISERVICE, "-o", "name")
    if done.returncode == 0:
        return True
    assert "NotFound" in done.stderr, done.stderr
    return False


def test_the_switch_takes_the_metrics_api_away(
    control_plane: ControlPlane,
) -> None:
    control_plane.start()
    served = resources(control_plane)
    assert {"pods.metrics.k8s.io", "nodes.metrics.k8s.io"} <= set(served), served
    wait_for(lambda: apiservice_exists(control_plane), timeout=30,
             message=f"the local APIService {APISERVICE}")  # fmt: skip
    raw = kubectl(control_plane, "get", "--raw", "/apis/metrics.k8s.io/v1beta1")
    assert raw.returncode == 0 and '"PodMetrics"' in raw.stdout, raw.stderr
    assert control_plane.stop() == 0

    # The components in processes of their own (their kinds tables keep the
    # metrics kinds; only the API server's withdraws them), as `skiff
    # controlplane` runs them on 2 CPUs or more.
    control_plane.extra_args = ["--disable", "metrics-server", "--component-processes"]
    control_plane.components = True
    control_plane.start()
    served = resources(control_plane)
    assert [r for r in served if r.endswith(".metrics.k8s.io")] == [], served
    assert [r for r in served if r.split(".", 1)[0] == "pods"] == ["pods"], served
    # Stored by the first start, deleted now as k3s deletes a disabled addon's objects.
    wait_for(lambda: not apiservice_exists(control_plane), timeout=30,
             message=f"the APIService {APISERVICE} deleted")  # fmt: skip
    raw = kubectl(control_plane, "get", "--raw", "/apis/metrics.k8s.io/v1beta1")
    assert raw.returncode == 1 and "NotFound" in raw.stderr, (raw.stdout, raw.stderr)
    groups = kubectl(control_plane, "get", "--raw", "/apis")
    assert groups.returncode == 0 and "metrics.k8s.io" not in groups.stdout
    for what in ("pods", "nodes"):
        top = kubectl(control_plane, "top", what)
        assert (top.returncode, top.stderr) == (1, "error: Metrics API not available\n"), top
    for create in (("namespace", "gone"), ("configmap", "c", "-n", "gone")):
        made = kubectl(control_plane, "create", *create)
        assert made.returncode == 0, made.stderr
    deleted = kubectl(control_plane, "delete", "namespace", "gone", "--timeout=60s")
    assert deleted.returncode == 0, deleted.stderr
    assert control_plane.stop() == 0
