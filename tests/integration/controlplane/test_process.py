"""The control plane as a real process: credentials, restarts, crashes, bad disks."""

from __future__ import annotations

import base64
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from controlplane.client.apiclient import connect, join
from controlplane.client.config import ClientConfig, load_config
from controlplane.client.errors import ApiError, Unauthenticated
from controlplane.client.interface import ListOptions, WatchEvent
from tests.harness.controlplane import REPO, ControlPlane
from tests.harness.wait import wait_for


def test_first_start_writes_credentials_and_serves_tls(control_plane: ControlPlane) -> None:
    control_plane.start()
    conf = yaml.safe_load((control_plane.data_dir / "admin.conf").read_text())
    assert conf["server"] == f"127.0.0.1:{control_plane.port}"
    assert base64.b64decode(conf["certificate-authority-data"]).startswith(b"-----BEGIN CERT")
    assert conf["token"].startswith("skiff-admin.")
    assert (control_plane.data_dir / "admin.conf").stat().st_mode & 0o077 == 0
    admin = control_plane.client()
    assert {n["metadata"]["name"] for n in admin.list("Namespace").items} >= {
        "default", "kube-system", "kube-public", "kube-node-lease",
    }  # fmt: skip
    config = load_config(control_plane.data_dir / "admin.conf")
    bad = connect(ClientConfig(config.server, config.ca_pem, "nope"))
    with bad, pytest.raises(Unauthenticated):
        bad.list("Pod", "default")
    join_token = (control_plane.data_dir / "join-token").read_text().strip()
    node_config = join(config.server, config.ca_pem, join_token, "worker-1")
    with connect(node_config) as node:
        node.create("Node", {"metadata": {"name": "worker-1"}})


def test_watch_resumes_across_a_restart(control_plane: ControlPlane) -> None:
    control_plane.start()
    client = control_plane.client()
    first = client.create("ConfigMap", {"metadata": {"name": "one"}}, "default")
    watch = client.watch("ConfigMap", "default",
                         ListOptions(resource_version=first["metadata"]["resourceVersion"]))  # fmt: skip
    seen: list[WatchEvent] = []
    ended = threading.Event()

    def read() -> None:
        try:
            for event in watch:
                seen.append(event)
        except ApiError:
            pass
        finally:
            ended.set()

    threading.Thread(target=read, daemon=True).start()
    client.create("ConfigMap", {"metadata": {"name": "two"}}, "default")
    wait_for(lambda: any(e.object["metadata"].get("name") == "two" for e in seen))
    assert control_plane.stop() == 0
    assert ended.wait(20), "the watch did not end when the server stopped"
    last_rv = [e for e in seen if e.type != "BOOKMARK"][-1].object["metadata"]["resourceVersion"]
    control_plane.start()
    client = control_plane.client()
    client.create("ConfigMap", {"metadata": {"name": "three"}}, "default")
    resumed = client.watch("ConfigMap", "default", ListOptions(resource_version=last_rv))
    events = iter(resumed)
    event = next(events)
    while event.type == "BOOKMARK":
        event = next(events)
    assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "three")
    resumed.stop()
    assert client.get("ConfigMap", "one", "default")


@pytest.mark.parametrize("store_args", [["--store", "sqlite"]])
def test_no_acknowledged_write_is_lost_after_kill_9(control_plane: ControlPlane) -> None:
    control_plane.start()
    acked: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(i: int) -> None:
        client = control_plane.client()
        j = 0
        while not stop.is_set():
            name = f"w{i}-{j}"
            try:
                client.create("ConfigMap", {"metadata": {"name": name}}, "default")
            except ApiError:
                return
            with lock:
                acked.append(name)
            j += 1

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    wait_for(lambda: len(acked) >= 400, timeout=60, message="400 acknowledged writes")
    assert control_plane.stop(signal.SIGKILL) == -signal.SIGKILL
    stop.set()
    for t in threads:
        t.join(30)
    with lock:
        acknowledged = set(acked)
    control_plane.start()
    stored = {
        o["metadata"]["name"] for o in control_plane.client().list("ConfigMap", "default").items
    }
    missing = acknowledged - stored
    assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {sorted(missing)[:5]}"


def test_damaged_database_is_a_clear_refusal(tmp_path: Path) -> None:
    data_dir = tmp_path / "cp"
    data_dir.mkdir()
    db = data_dir / "state.db"
    db.write_bytes(b"definitely not sqlite" * 200)
    before = db.read_bytes()
    result = subprocess.run(
        [sys.executable, "-m", "skiff", "controlplane", "--listen", "127.0.0.1:0",
         "--data-dir", str(data_dir)],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    assert "refusing to start" in result.stderr
    assert db.read_bytes() == before
