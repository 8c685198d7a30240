"""A container's failed image pull is an Event, as the kubelet's image
manager records it: Warning `Failed`, `Failed to pull image "IMAGE": ERROR`,
its involvedObject naming the container by field path (a sidecar's is
spec.initContainers{NAME}); said once per error while the pod backs off,
again once the pull had succeeded and fails anew. Before, a pod whose
sidecar image could not be pulled had no event at all."""

from __future__ import annotations

from typing import Any

from agent.pod_events import PodEvents, image_pull_events
from agent.pod_status import Waiting
from controlplane.client.interface import ListOptions
from tests.fakes.fake_apiclient import FakeApiClient

POD: dict[str, Any] = {
    "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
    "spec": {
        "initContainers": [{"name": "side", "image": "example.com/no/such:1",
                            "restartPolicy": "Always"}],
        "containers": [{"name": "app", "image": "busybox:1", "imagePullPolicy": "Never"}],
    },
}  # fmt: skip
PULL = Waiting("ErrImagePull", "example.com/no/such:1: not found")


def events(api: FakeApiClient) -> list[dict[str, Any]]:
    return api.list("Event", "ns", ListOptions()).items


def test_a_sidecars_failed_pull_is_one_failed_event_naming_its_field_path() -> None:
    api = FakeApiClient()
    ev = PodEvents(api, "n1")
    image_pull_events(ev, POD, {"side": PULL, "app": Waiting("PodInitializing")})
    image_pull_events(ev, POD, {"side": Waiting("ImagePullBackOff", "Back-off pulling image")})
    image_pull_events(ev, POD, {"side": PULL})  # the same error again: not said again
    (e,) = events(api)
    assert e["type"] == "Warning" and e["reason"] == "Failed"
    assert e["message"] == (
        'Failed to pull image "example.com/no/such:1": example.com/no/such:1: not found'
    )
    assert e["involvedObject"]["fieldPath"] == "spec.initContainers{side}"
    assert e["involvedObject"]["name"] == "p" and e["source"]["component"] == "kubelet"

    image_pull_events(ev, POD, {})  # pulled at last: forgotten
    image_pull_events(ev, POD, {"side": PULL})
    assert len(events(api)) == 2


def test_never_pull_policy_without_the_image_is_err_image_never_pull() -> None:
    api = FakeApiClient()
    msg = 'Container image "busybox:1" is not present with pull policy of Never'
    image_pull_events(PodEvents(api, "n1"), POD, {"app": Waiting("ErrImageNeverPull", msg)})
    (e,) = events(api)
    assert (e["reason"], e["message"]) == ("ErrImageNeverPull", msg)
    assert e["involvedObject"]["fieldPath"] == "spec.containers{app}"
