"""API-backed volumes in a running pod on `skiff up` (issue 33).

A ConfigMap edit reaches the running pod's volume within the agent's sync
period (its resync, 10 s), through the atomic writer (`..data` points at a
new timestamped dir, the key is a symlink through it); a subPath mount of
the same key keeps the content it started with, as in Kubernetes. A 4 KiB
random Secret arrives byte for byte (it was decoded as text before, its
bytes past 0x7f replaced). A projected volume (ConfigMap, Secret and the
pod's labels) and a downwardAPI volume follow their sources too. Deleting
the ConfigMap under the running pod leaves the last content and a
FailedMount event; the pod keeps running.
A failed container's termination message falls back to its log's tail.
Files are read in the pod through `Cluster.exec_read`: kubectl 1.33 may
drop the whole output of a quick command and still exit 0 (a client-go race,
tests/harness/kubectl.py), which once read as a volume emptied under a pod.
"""

from __future__ import annotations

import base64
import hashlib
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agent.agent import RESYNC_PERIOD as SYNC_PERIOD
from controlplane.client.interface import ListOptions
from tests.e2e.agent.kubelet_up import Cluster, busybox_pod, container, skiff_up
from tests.harness.images import TestImages
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(images: TestImages) -> Iterator[Cluster]:
    with skiff_up(images) as c:
        yield c


def configmap(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}, "data": data}  # fmt: skip


def cat(cluster: Cluster, pod: str, path: str) -> str:
    return cluster.exec_read(pod, "cat", path)


def test_a_configmap_edit_reaches_the_running_pod_within_the_sync_period(
    cluster: Cluster,
) -> None:
    cluster.api.create("ConfigMap", configmap("settings", {"mode": "blue"}), "default")
    pod = busybox_pod(
        "reader",
        container("c", "sleep 3600", volumeMounts=[
            {"name": "cfg", "mountPath": "/etc/app"},
            {"name": "cfg", "mountPath": "/etc/pinned", "subPath": "mode"},
        ]),
        volumes=[{"name": "cfg", "configMap": {"name": "settings"}}],
    )  # fmt: skip
    cluster.api.create("Pod", pod, "default")
    cluster.wait_phase("reader", "Running")
    assert cat(cluster, "reader", "/etc/app/mode") == "blue"
    first = cluster.exec_read("reader", "readlink", "/etc/app/..data").strip()
    assert first.startswith("..20"), first
    assert cluster.exec_read("reader", "readlink", "/etc/app/mode").strip() == "..data/mode"
    cluster.api.patch("ConfigMap", "settings", {"data": {"mode": "green"}}, "default")
    edited = time.monotonic()
    wait_for(
        lambda: cat(cluster, "reader", "/etc/app/mode") == "green",
        timeout=SYNC_PERIOD + 5,
        interval=0.5,
        message=f"the edit in the pod within the sync period ({SYNC_PERIOD:.0f}s)",
    )
    took = time.monotonic() - edited
    second = cluster.exec_read("reader", "readlink", "/etc/app/..data").strip()
    assert second != first and second.startswith("..20")
    assert cat(cluster, "reader", "/etc/pinned") == "blue"  # subPath: no updates
    print(f"ConfigMap edit visible in the pod after {took:.1f}s")

    # Deleted under the running pod: the last content stays, an event says why.
    cluster.api.delete("ConfigMap", "settings", "default")

    def failed_mount() -> list[dict[str, Any]]:
        events = cluster.api.list("Event", "default", ListOptions()).items
        return [
            e for e in events
            if e.get("reason") == "FailedMount"
            and e["involvedObject"].get("name") == "reader"
            and 'configmap "settings" not found' in e.get("message", "")
        ]  # fmt: skip

    wait_for(failed_mount, timeout=SYNC_PERIOD + 5, interval=0.5, message="a FailedMount event")
    assert cat(cluster, "reader", "/etc/app/mode") == "green"
    assert cluster.status("reader")["phase"] == "Running"
    cluster.api.delete("Pod", "reader", "default")


def test_projected_and_downward_api_volumes_follow_their_sources(cluster: Cluster) -> None:
    cluster.api.create("ConfigMap", configmap("proj", {"level": "1"}), "default")
    cluster.api.create(
        "Secret",
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "proj", "namespace": "default"},
         "data": {"token": base64.b64encode(b"abc").decode()}},
        "default",
    )  # fmt: skip
    labels = {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}
    pod = busybox_pod(
        "projected",
        container("c", "sleep 3600", volumeMounts=[
            {"name": "all", "mountPath": "/etc/all"}, {"name": "info", "mountPath": "/etc/info"},
        ]),
        volumes=[
            {"name": "all", "projected": {"sources": [
                {"configMap": {"name": "proj"}}, {"secret": {"name": "proj"}},
                {"downwardAPI": {"items": [labels]}},
            ]}},
            {"name": "info", "downwardAPI": {"items": [labels]}},
        ],
    )  # fmt: skip
    pod["metadata"]["labels"] = {"tier": "one"}
    cluster.api.create("Pod", pod, "default")
    cluster.wait_phase("projected", "Running")
    assert cat(cluster, "projected", "/etc/all/level") == "1"
    assert cat(cluster, "projected", "/etc/all/token") == "abc"
    assert cat(cluster, "projected", "/etc/info/labels") == 'tier="one"'
    cluster.api.patch("ConfigMap", "proj", {"data": {"level": "2"}}, "default")
    cluster.api.patch(
        "Secret", "proj", {"data": {"token": base64.b64encode(b"xyz").decode()}}, "default"
    )
    cluster.api.patch("Pod", "projected", {"metadata": {"labels": {"tier": "two"}}}, "default")

    def followed() -> bool:
        return (
            cat(cluster, "projected", "/etc/all/level") == "2"
            and cat(cluster, "projected", "/etc/all/token") == "xyz"
            and cat(cluster, "projected", "/etc/all/labels") == 'tier="two"'
            and cat(cluster, "projected", "/etc/info/labels") == 'tier="two"'
        )

    wait_for(followed, timeout=SYNC_PERIOD + 5, interval=0.5,
             message="the projected and downwardAPI files to follow their sources")  # fmt: skip
    assert cluster.status("projected")["containerStatuses"][0]["restartCount"] == 0
    cluster.api.delete("Pod", "projected", "default")
    cluster.api.delete("ConfigMap", "proj", "default")
    cluster.api.delete("Secret", "proj", "default")


def test_a_4kib_random_secret_arrives_byte_for_byte(cluster: Cluster) -> None:
    blob = os.urandom(4096)
    cluster.api.create(
        "Secret",
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "keystore", "namespace": "default"},
         "data": {"ks.p12": base64.b64encode(blob).decode()}},
        "default",
    )  # fmt: skip
    pod = busybox_pod(
        "keys",
        container("c", "base64 /keys/ks.p12; sleep 3600",
                  volumeMounts=[{"name": "k", "mountPath": "/keys", "readOnly": True}]),
        volumes=[{"name": "k", "secret": {"secretName": "keystore", "defaultMode": 0o400}}],
    )  # fmt: skip
    cluster.api.create("Pod", pod, "default")
    cluster.wait_phase("keys", "Running")

    def logged() -> bytes:
        out = cluster.kubectl("logs", "keys").stdout
        try:
            return base64.b64decode("".join(out.split()), validate=True)
        except ValueError:
            return b""

    got: bytes = wait_for(lambda: logged() if len(logged()) == 4096 else b"", timeout=20,
                          interval=0.5, message="the secret's base64 in the log")  # fmt: skip
    assert hashlib.sha256(got).hexdigest() == hashlib.sha256(blob).hexdigest()
    mode = cluster.exec_read("keys", "stat", "-L", "-c", "%a", "/keys/ks.p12")
    assert mode.strip() == "400"
    cluster.api.delete("Pod", "keys", "default")


def test_fallback_to_logs_on_error_is_the_termination_message(cluster: Cluster) -> None:
    lines = "; ".join(f"echo line {i}" for i in range(100))
    failing = container("c", f"{lines}; exit 3", terminationMessagePolicy="FallbackToLogsOnError")
    writer = container(
        "w", "printf 'written by the app' > /dev/termination-log; echo noise; exit 1",
        terminationMessagePolicy="FallbackToLogsOnError",
    )  # fmt: skip
    cluster.api.create("Pod", busybox_pod("fails", failing, writer, restartPolicy="Never"),
                       "default")  # fmt: skip
    st = cluster.wait_phase("fails", "Failed")
    term = {s["name"]: s["state"]["terminated"] for s in st["containerStatuses"]}
    assert term["c"]["exitCode"] == 3
    assert term["c"]["message"].endswith("line 99\n") and "line 19\n" not in term["c"]["message"]
    assert term["w"]["message"] == "written by the app"
    cluster.api.delete("Pod", "fails", "default")
