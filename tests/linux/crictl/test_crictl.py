"""crictl (cri-tools v1.26.1, built locally) against `skiff runtime`.

The flows a user types: pull, images, inspecti, imagefsinfo, runp, create,
start, ps, pods, inspect, inspectp, logs, exec -s, stats, stop, rm, stopp,
rmp, rmi, info, version. Images come from the local registry fixture through
a registries.yaml mirror for docker.io, with the default endpoint disabled so
nothing leaves the machine. Skipped where crictl is not installed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.registry import Registry
from tests.harness.wait import wait_for
from tests.linux.runtime.harness import Runtime, running_runtime

CRICTL = shutil.which("crictl")
pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(CRICTL is None, reason="crictl is not installed (build cri-tools v1.26.1)"),
]


@pytest.fixture
def rt(tmp_path: Path, busybox_rootfs: Path, registry: Registry, images: Any) -> Iterator[Runtime]:
    registry.push(images.busybox(), repository="library/busybox", tag="1.36")
    conf = tmp_path / "registries.yaml"
    conf.write_text(
        "disable_default_endpoint: true\n"
        f'mirrors:\n  docker.io:\n    endpoint: ["{registry.url}"]\n'
    )
    with running_runtime(
        tmp_path / "rt", busybox_rootfs, "--registry-config", str(conf), fake_images=False
    ) as r:
        yield r


def crictl(rt: Runtime, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    assert CRICTL is not None
    cmd = [
        CRICTL,
        "--runtime-endpoint",
        f"unix://{rt.socket}",
        "--image-endpoint",
        f"unix://{rt.socket}",
        "--timeout",
        "60s",
        *args,
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    if check and res.returncode != 0:
        raise AssertionError(f"crictl {' '.join(args)} failed: {res.stdout}{res.stderr}")
    return res


def test_image_flows(rt: Runtime) -> None:
    out = crictl(rt, "pull", "busybox:1.36").stdout
    assert "Image is up to date for sha256:" in out
    images = crictl(rt, "images").stdout
    assert "docker.io/library/busybox" in images and "1.36" in images
    status = json.loads(crictl(rt, "inspecti", "busybox:1.36").stdout)["status"]
    assert status["repoTags"] == ["docker.io/library/busybox:1.36"]
    assert status["id"].startswith("sha256:") and int(status["size"]) > 0
    fs = json.loads(crictl(rt, "imagefsinfo").stdout)["status"]
    assert int(fs["usedBytes"]["value"]) > 0
    crictl(rt, "rmi", "busybox:1.36")
    assert "busybox" not in crictl(rt, "images").stdout
    missing = crictl(rt, "pull", "nope/missing:1", check=False)
    assert missing.returncode != 0 and "not found" in (missing.stdout + missing.stderr).lower()


def test_pod_and_container_lifecycle(rt: Runtime, tmp_path: Path) -> None:
    crictl(rt, "pull", "busybox:1.36")
    logdir = tmp_path / "logs"
    pod = {
        "metadata": {
            "name": "crictl-pod",
            "namespace": "default",
            "uid": uuid.uuid4().hex,
            "attempt": 0,
        },
        "hostname": "crictl-pod",
        "log_directory": str(logdir),
        "linux": {},
    }
    ctr = {
        "metadata": {"name": "main"},
        "image": {"image": "busybox:1.36"},
        "command": ["sh", "-c", "echo started; echo oops >&2; exec sleep 600"],
        "log_path": "main/0.log",
        "linux": {},
    }
    (tmp_path / "pod.json").write_text(json.dumps(pod))
    (tmp_path / "ctr.json").write_text(json.dumps(ctr))
    pod_id = crictl(rt, "runp", str(tmp_path / "pod.json")).stdout.strip()
    assert len(pod_id) == 64
    try:
        cid = crictl(
            rt, "create", pod_id, str(tmp_path / "ctr.json"), str(tmp_path / "pod.json")
        ).stdout.strip()
        crictl(rt, "start", cid)
        assert cid[:13] in crictl(rt, "ps").stdout
        assert pod_id[:13] in crictl(rt, "pods").stdout
        info = json.loads(crictl(rt, "inspect", cid).stdout)
        assert info["status"]["state"] == "CONTAINER_RUNNING"
        assert info["status"]["logPath"] == str(logdir / "main/0.log")
        assert (
            json.loads(crictl(rt, "inspectp", pod_id).stdout)["status"]["state"] == "SANDBOX_READY"
        )
        wait_for(
            lambda: "started" in crictl(rt, "logs", cid).stdout,
            timeout=10,
            message="container output",
        )
        logs = crictl(rt, "logs", cid)
        assert logs.stdout == "started\n" and logs.stderr == "oops\n"
        # crictl itself adds a newline after the output
        assert crictl(rt, "exec", "-s", cid, "hostname").stdout.strip() == "crictl-pod"
        failing = crictl(rt, "exec", "-s", cid, "sh", "-c", "exit 3", check=False)
        assert failing.returncode != 0 and "exited with 3" in failing.stderr
        stats = json.loads(crictl(rt, "stats", "-o", "json", cid).stdout)["stats"][0]
        assert int(stats["memory"]["workingSetBytes"]["value"]) > 0
        crictl(rt, "stop", "--timeout", "2", cid)
        assert (
            json.loads(crictl(rt, "inspect", cid).stdout)["status"]["state"] == "CONTAINER_EXITED"
        )
        crictl(rt, "rm", cid)
        assert cid[:13] not in crictl(rt, "ps", "-a").stdout
    finally:
        crictl(rt, "stopp", pod_id, check=False)
        crictl(rt, "rmp", pod_id, check=False)
    assert pod_id[:13] not in crictl(rt, "pods").stdout
    info = json.loads(crictl(rt, "info").stdout)
    conds = {c["type"]: c["status"] for c in info["status"]["conditions"]}
    assert conds["RuntimeReady"] is True
    assert "RuntimeName:  skiff" in crictl(rt, "version").stdout
