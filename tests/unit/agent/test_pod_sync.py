"""SyncPod against the in-memory CRI runtime, through a real gRPC socket."""

import pytest

from agent.pod_sync import pull_policy


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("busybox", "Always"),
        ("busybox:latest", "Always"),
        ("busybox:1.36", "IfNotPresent"),
        ("r:5000/busybox@sha256:ab", "IfNotPresent"),
        ("localhost:5000/busybox", "Always"),
    ],
)
def test_default_pull_policy(image: str, policy: str) -> None:
    assert pull_policy({"image": image}) == policy
