"""Fixtures of the control-plane integration tests: a `skiff controlplane`
process (tests/harness/controlplane.py) over each store, SQLite and etcd."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.controlplane import ControlPlane
from tests.harness.etcd import EtcdServer

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(params=["sqlite", "etcd"])
def store_args(request: pytest.FixtureRequest) -> list[str]:
    if request.param == "sqlite":
        return ["--store", "sqlite"]
    etcd: EtcdServer = request.getfixturevalue("etcd_server")
    prefix = f"/it-{os.getpid()}-{request.node.name}".replace("[", "-").replace("]", "")
    return ["--store", "etcd", "--etcd-endpoints", etcd.endpoint, "--etcd-prefix", prefix]


@pytest.fixture
def control_plane(tmp_path: Path, store_args: list[str]) -> Iterator[ControlPlane]:
    cp = ControlPlane(tmp_path / "cp", store_args)
    try:
        yield cp
    finally:
        cp.close()
