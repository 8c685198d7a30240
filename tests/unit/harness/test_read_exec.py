"""read_exec: a read-only `kubectl exec` is run again only when kubectl says
it dropped a message (kubernetes/kubernetes#131189); seen once in `make
test` as `cat` answering nothing with exit 0 after a ConfigMap edit."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from tests.harness.kubectl import read_exec

DROPPED = (
    "E1203 00:29:20.545843    2422 websocket.go:297] Unknown stream id 1, discarding message\n"
)


Run = Callable[[], subprocess.CompletedProcess[str]]


def runs(*answers: tuple[str, str]) -> tuple[list[int], Run]:
    calls: list[int] = []

    def run() -> subprocess.CompletedProcess[str]:
        out, err = answers[len(calls)]
        calls.append(1)
        return subprocess.CompletedProcess(["kubectl"], 0, out, err)

    return calls, run


def test_a_dropped_output_is_read_again() -> None:
    calls, run = runs(("", DROPPED), ("green", ""))
    assert read_exec(run).stdout == "green"
    assert len(calls) == 2


def test_an_empty_output_kubectl_did_not_drop_is_the_answer() -> None:
    calls, run = runs(("", ""), ("green", ""))
    assert read_exec(run).stdout == ""
    assert len(calls) == 1


def test_dropped_every_time_fails() -> None:
    calls, run = runs(("", DROPPED), ("", DROPPED), ("", DROPPED))
    with pytest.raises(AssertionError, match="dropped output 3 times"):
        read_exec(run)
    assert len(calls) == 3
