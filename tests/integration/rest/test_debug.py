"""kubectl 1.33 debug against the API server: the pods/ephemeralcontainers
subresource as Kubernetes serves it (issue 33). Before, kubectl said
`the server could not find the requested resource`.

- `kubectl debug POD --image=... --target=app` adds an ephemeral container
  through a strategic merge patch of the subresource; the pod's other
  fields are untouched by it, even when the request carries changes;
- a missing target, ports on an ephemeral container, a changed or removed
  existing one: Kubernetes' validation errors;
- GET of the subresource answers the pod.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.harness.kubectl import NEWEST
from tests.integration.rest.conftest import Cluster

pytestmark = [pytest.mark.slow]

KUBECTL = NEWEST
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"containers": [{"name": "app", "image": "busybox", "command": ["sleep", "1d"]}]},
}


def kubectl(
    cluster: Cluster, *args: str, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    if not KUBECTL.exists():
        pytest.skip(f"{KUBECTL} is not installed")
    return subprocess.run(
        [str(KUBECTL), *args], input=input, capture_output=True, text=True, timeout=60,
        env=cluster.env(),
    )  # fmt: skip


def pod(cluster: Cluster) -> dict[str, Any]:
    got: dict[str, Any] = json.loads(kubectl(cluster, "get", "pod", "web", "-o", "json").stdout)
    return got


def test_kubectl_debug_adds_an_ephemeral_container(cluster: Cluster) -> None:
    done = kubectl(cluster, "apply", "-f", "-", input=json.dumps(POD))
    assert done.returncode == 0, done.stderr
    done = kubectl(cluster, "debug", "web", "--image=busybox", "--target=app", "-c", "dbg",
                   "--", "sleep", "1d")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert 'Targeting container "app"' in done.stdout + done.stderr
    (ec,) = pod(cluster)["spec"]["ephemeralContainers"]
    assert ec["name"] == "dbg" and ec["targetContainerName"] == "app"
    assert ec["terminationMessagePolicy"] == "File"  # defaulted as a container is
    # A second one, its name chosen by kubectl; the first stays as it was.
    done = kubectl(cluster, "debug", "web", "--image=busybox")
    assert done.returncode == 0, done.stderr
    names = [c["name"] for c in pod(cluster)["spec"]["ephemeralContainers"]]
    assert names[0] == "dbg" and names[1].startswith("debugger-"), names


def test_a_missing_target_gets_kubernetes_error(cluster: Cluster) -> None:
    done = kubectl(cluster, "debug", "web", "--image=busybox", "--target=nosuch", "-c", "lost")
    assert done.returncode != 0
    assert 'spec.ephemeralContainers[2].targetContainerName: Not found: "nosuch"' in done.stderr, (
        done.stderr
    )
    assert "lost" not in [c["name"] for c in pod(cluster)["spec"]["ephemeralContainers"]]


def test_the_subresource_takes_only_ephemeral_containers_and_its_rules(cluster: Cluster) -> None:
    base = ["--subresource", "ephemeralcontainers", "--type", "strategic"]
    patch = {"spec": {"ephemeralContainers": [{"name": "web2", "image": "busybox",
                                               "ports": [{"containerPort": 80}]}]}}  # fmt: skip
    done = kubectl(cluster, "patch", "pod", "web", *base, "-p", json.dumps(patch))
    assert done.returncode != 0
    assert (
        "spec.ephemeralContainers[2].ports: Forbidden: cannot be set for an Ephemeral Container"
        in (done.stderr)
    )
    current = pod(cluster)
    changed = json.loads(json.dumps(current))
    changed["spec"]["ephemeralContainers"][0]["image"] = "alpine"
    changed["spec"]["containers"][0]["image"] = "nginx"
    done = kubectl(cluster, "replace", "--subresource", "ephemeralcontainers", "-f", "-",
                   input=json.dumps(changed))  # fmt: skip
    assert done.returncode != 0 and 'existing ephemeral containers "dbg" may not be changed' in (
        done.stderr
    )
    added = json.loads(json.dumps(current))
    added["spec"]["ephemeralContainers"].append({"name": "third", "image": "busybox"})
    added["spec"]["containers"][0]["image"] = "nginx"  # not the subresource's to change
    done = kubectl(cluster, "replace", "--subresource", "ephemeralcontainers", "-f", "-",
                   input=json.dumps(added))  # fmt: skip
    assert done.returncode == 0, done.stderr
    after = pod(cluster)
    assert after["spec"]["containers"][0]["image"] == "busybox"
    assert [c["name"] for c in after["spec"]["ephemeralContainers"]][-1] == "third"
    got = kubectl(
        cluster, "get", "--raw", "/api/v1/namespaces/default/pods/web/ephemeralcontainers"
    )
    assert json.loads(got.stdout)["metadata"]["name"] == "web"
