"""A Deployment end to end: controllers make the pods, the scheduler binds
them to the test's node, the agent runs them, and each answers HTTP at its
pod IP from the host (examples/busybox-web.yaml, with the test's image).

Runs once `skiff controlplane` starts the scheduler and the controller
manager (controlplane/main.py); skipped before that.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from controlplane.client.apiclient import GrpcApiClient
from controlplane.client.interface import ListOptions
from tests.e2e.agent.helpers import E2EImages, http_get
from tests.harness.nodeprocs import Node, controlplane_runs_controllers
from tests.harness.wait import wait_for

HAS_CONTROLLERS = controlplane_runs_controllers()

pytestmark = [
    pytest.mark.root,
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(
        not HAS_CONTROLLERS, reason="skiff controlplane does not start the scheduler/controllers"
    ),
]

SCRIPT = (
    "mkdir -p /www && echo hello from $(hostname) > /www/index.html && exec httpd -f -p 80 -h /www"
)


def deployment(name: str, node: Node, image: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    # Only this test's node: the module's earlier nodes are gone.
                    "nodeSelector": {"kubernetes.io/hostname": node.spec.name},
                    "terminationGracePeriodSeconds": 1,
                    "containers": [
                        {
                            "name": "httpd",
                            "image": image,
                            "command": ["sh", "-c", SCRIPT],
                            "ports": [{"containerPort": 80, "name": "http"}],
                            "readinessProbe": {
                                "httpGet": {"path": "/", "port": "http"},
                                "periodSeconds": 1,
                            },
                            "resources": {
                                "requests": {"cpu": "50m", "memory": "16Mi"},
                                "limits": {"cpu": "200m", "memory": "64Mi"},
                            },
                        }
                    ],
                },
            },
        },
    }


def test_deployment_pods_running_and_reachable(
    node: Node, admin: GrpcApiClient, e2e_images: E2EImages
) -> None:
    name = f"web-{node.spec.name}"
    admin.create("Deployment", deployment(name, node, e2e_images.busybox, 2), "default")
    try:

        def ready_pods() -> list[dict[str, Any]]:
            pods = admin.list("Pod", "default", ListOptions(label_selector=f"app={name}")).items
            ok = [
                p
                for p in pods
                if (p.get("status") or {}).get("phase") == "Running"
                and (p.get("status") or {}).get("podIP")
                and any(
                    c.get("type") == "Ready" and c.get("status") == "True"
                    for c in p["status"].get("conditions") or []
                )
            ]
            return ok if len(ok) == 2 else []

        pods = wait_for(ready_pods, timeout=90, message=f"2 pods of {name} Running and Ready")
        for p in pods:
            assert p["spec"]["nodeName"] == node.spec.name
            ip = p["status"]["podIP"]
            body = wait_for(partial(http_get, f"http://{ip}/"), timeout=15, message=f"GET {ip}")
            assert body.strip() == f"hello from {p['metadata']['name']}"

        def available() -> bool:
            st = admin.get("Deployment", name, "default").get("status") or {}
            return int(st.get("availableReplicas") or 0) == 2

        wait_for(available, timeout=30, message="Deployment availableReplicas 2")
    finally:
        admin.delete("Deployment", name, "default")
