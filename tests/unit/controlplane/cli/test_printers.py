"""Formatting helpers: kubectl's human durations, tables, pod status."""

from __future__ import annotations

import pytest

from controlplane.cli.printers import format_table, human_duration, pod_status_reason


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (59, "59s"),
        (119, "119s"),
        (120, "2m"),
        (150, "2m30s"),
        (600, "10m"),
        (179 * 60, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 60, "3h1m"),
        (8 * 3600, "8h"),
        (47 * 3600, "47h"),
        (48 * 3600, "2d"),
        (50 * 3600, "2d2h"),
        (8 * 86400, "8d"),
        (800 * 86400, "2y70d"),
        (9 * 365 * 86400, "9y"),
        (-5, "<invalid>"),
    ],
)
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def test_table_pads_three_spaces_and_strips_trailing() -> None:
    out = format_table(["NAME", "X"], [["a", "1"], ["longer", ""]])
    assert out == "NAME     X\na        1\nlonger\n"


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        ({}, "Pending"),
        ({"status": {"phase": "Running"}}, "Running"),
        ({"status": {"phase": "Failed", "reason": "Evicted"}}, "Evicted"),
        (
            {
                "status": {
                    "phase": "Running",
                    "containerStatuses": [{"state": {"waiting": {"reason": "ImagePullBackOff"}}}],
                }
            },
            "ImagePullBackOff",
        ),
        (
            {
                "status": {
                    "phase": "Running",
                    "containerStatuses": [{"state": {"terminated": {"exitCode": 2}}}],
                }
            },
            "ExitCode:2",
        ),
        (
            {
                "spec": {"initContainers": [{}, {}]},
                "status": {
                    "phase": "Pending",
                    "initContainerStatuses": [
                        {"state": {"terminated": {"exitCode": 0}}},
                        {"state": {"running": {}}},
                    ],
                },
            },
            "Init:1/2",
        ),
        ({"metadata": {"deletionTimestamp": "x"}, "status": {"phase": "Running"}}, "Terminating"),
    ],
)
def test_pod_status_reason(pod: dict[str, object], want: str) -> None:
    assert pod_status_reason(pod) == want


def test_pod_row_counts_native_sidecars_as_kubectl_does() -> None:
    pod = {
        "metadata": {"name": "fed"},
        "spec": {
            "initContainers": [{"name": "feeder", "image": "b", "restartPolicy": "Always"}],
            "containers": [{"name": "app", "image": "b"}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Initialized", "status": "True"}],
            "initContainerStatuses": [{"name": "feeder", "ready": True, "started": True,
                                       "restartCount": 2, "state": {"running": {}}}],
            "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0,
                                   "state": {"running": {}}}],
        },
    }  # fmt: skip
    assert pod_status_reason(pod) == "Running"
    from controlplane.api.kinds.core.pod import row

    assert row(pod, 0.0, False)[1:4] == ["2/2", "Running", "2"]
