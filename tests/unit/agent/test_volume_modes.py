"""Secrets on disk (issue 17): Secret and projected volumes live on tmpfs,
their files are created with the mode `defaultMode` asks (never readable
before a chmod), and the pod's directory is not open to every host user."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.volumes import setup_volumes, teardown_volumes
from tests.unit.agent.test_volumes import SRC, make_pod

pytestmark = pytest.mark.root


def fs_type(path: Path) -> str:
    best, kind = "", ""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            point = fields[4]
            sep = fields.index("-")
            if (str(path) + "/").startswith(point.rstrip("/") + "/") and len(point) > len(best):
                best, kind = point, fields[sep + 1]
    return kind


def test_secret_and_projected_volumes_on_tmpfs_with_their_modes(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root")
    pod = make_pod(
        {"name": "sec", "secret": {"secretName": "creds", "defaultMode": 0o440}},
        {
            "name": "proj",
            "projected": {"sources": [{"secret": {"name": "creds"}}], "defaultMode": 0o400},
        },
        {"name": "cfg", "configMap": {"name": "cfg"}},
    )
    agent = tmp_path / "agent"
    try:
        paths = setup_volumes(agent, pod, SRC)
        for name, mode in (("sec", 0o440), ("proj", 0o400)):
            assert fs_type(Path(paths[name])) == "tmpfs", name
            f = Path(paths[name]) / "password"
            assert f.read_text() == "s3cret"
            assert os.stat(f).st_mode & 0o777 == mode, name
        assert fs_type(Path(paths["cfg"])) != "tmpfs"  # a ConfigMap is no secret
        assert os.stat(agent / "pods" / "uid-1").st_mode & 0o007 == 0
    finally:
        teardown_volumes(agent, "uid-1")
    assert not (agent / "pods" / "uid-1").exists()
