"""Kinds whose Kind name another group already owns (Volcano's Job beside
batch/v1 Job, a CRD's kind): they are keyed `Kind.group`, stored apart, and
the built-in kind keeps its name, its storage and its rules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controlplane.api import kinds

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


def test_qualified_key_and_lookups(other_job: kinds.KindInfo) -> None:
    assert other_job.key == "Job.batch.example.com"
    assert other_job.storage_name == "jobs.batch.example.com"
    assert kinds.by_kind("Job").api_version == "batch/v1"
    assert kinds.by_kind("Job.batch.example.com") is other_job
    assert kinds.lookup("jobs.batch.example.com") is other_job
    assert kinds.lookup("xj") is other_job
    assert kinds.lookup("jobs").api_version == "batch/v1"  # the built-in keeps its names
    assert kinds.for_object("batch.example.com/v1", "Job") is other_job
    assert kinds.for_object("batch/v1", "Job").api_version == "batch/v1"
    assert "Job.batch.example.com" in kinds.supported_kinds()


def test_register_refuses_to_shadow_a_builtin() -> None:
    with pytest.raises(ValueError, match="must be qualified"):
        kinds.register(kinds.KindInfo("Job", "batch.example.com/v1", "jobs", "job"))
    with pytest.raises(ValueError, match="built in"):
        kinds.register(kinds.KindInfo("Pod", "v1", "pods", "pod"))
    with pytest.raises(ValueError, match="built in"):
        kinds.unregister("Pod")


def test_unregistered_kind_is_unknown() -> None:
    kinds.register(OTHER_JOB)
    kinds.unregister(OTHER_JOB.key)
    with pytest.raises(kinds.UnknownKind):
        kinds.by_kind("Job.batch.example.com")
