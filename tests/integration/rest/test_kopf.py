"""kopf, an operator framework from PyPI, unchanged against the REST API:
its operator reconciles labelled ConfigMaps into copies (kopf_operator.py)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.harness.wait import wait_for
from tests.integration.rest.conftest import Cluster

pytest.importorskip("kopf")
pytestmark = pytest.mark.slow

OPERATOR = Path(__file__).with_name("kopf_operator.py")


def test_kopf_operator_reconciles(cluster: Cluster, tmp_path: Path) -> None:
    kopf = shutil.which("kopf", path=str(Path(sys.executable).parent))
    assert kopf is not None
    registry = cluster.running.server.registry
    log = (tmp_path / "kopf.log").open("wb")
    proc = subprocess.Popen(
        [kopf, "run", str(OPERATOR), "--standalone", "--namespace", "default"],
        stdout=log, stderr=subprocess.STDOUT, env=cluster.env(),
    )  # fmt: skip
    log.close()

    def copy_data() -> Any:
        assert proc.poll() is None, (tmp_path / "kopf.log").read_text()[-3000:]
        try:
            return registry.get_object("ConfigMap", "src-copy", "default").get("data")
        except Exception:
            return None

    try:
        registry.create("ConfigMap", {
            "metadata": {"name": "src", "namespace": "default",
                         "labels": {"skiff-test": "source"}},
            "data": {"a": "1"},
        })  # fmt: skip
        wait_for(lambda: copy_data() == {"a": "1"}, timeout=60, message="kopf to make the copy")
        owner = registry.get_object("ConfigMap", "src-copy", "default")["metadata"]
        assert owner["ownerReferences"][0]["name"] == "src"
        registry.patch("ConfigMap", "src", {"data": {"a": "2"}}, "default")
        wait_for(lambda: copy_data() == {"a": "2"}, timeout=60, message="kopf to update it")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
