"""Kinds whose Kind name another group already owns (Volcano's Job beside
batch/v1 Job, a CRD's kind): they are keyed `Kind.group`, stored apart, and
the built-in kind keeps its name, its storage and its rules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controlplane.api import kinds
from controlplane.client.apiclient import GrpcApiClient
from controlplane.client.errors import Invalid

OTHER_JOB = kinds.KindInfo(
    "Job", "batch.example.com/v1", "jobs", "job", ("xj",), qualified=True, has_status=False
)


@pytest.fixture
def other_job() -> Iterator[kinds.KindInfo]:
    kinds.register(OTHER_JOB)
    try:
        yield OTHER_JOB
    finally:
        kinds.unregister(OTHER_JOB.key)


def test_same_kind_name_in_two_groups_is_stored_apart(
    client: GrpcApiClient, other_job: kinds.KindInfo
) -> None:
    batch_job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "same"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox:1.36"}],
                }
            }
        },
    }
    other = {"apiVersion": "batch.example.com/v1", "kind": "Job", "metadata": {"name": "same"}}
    client.create("Job", batch_job, "default")
    client.create(other_job.key, other, "default")
    assert client.get("Job", "same", "default")["apiVersion"] == "batch/v1"
    assert client.get(other_job.key, "same", "default")["apiVersion"] == "batch.example.com/v1"
    assert [o["apiVersion"] for o in client.list(other_job.key, "default").items] == [
        "batch.example.com/v1"
    ]
    # The built-in's rules do not apply to the other group's kind, nor the
    # other group's apiVersion to the built-in.
    with pytest.raises(Invalid, match="apiVersion"):
        client.create("Job", {**other, "metadata": {"name": "x"}}, "default")
    client.delete(other_job.key, "same", "default")
    assert client.get("Job", "same", "default")["metadata"]["name"] == "same"
