"""Snapshots of a running control plane, restored with --cluster-reset, on SQLite and etcd."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from controlplane.client.errors import ApiError
from tests.harness.controlplane import REPO, ControlPlane
from tests.harness.wait import wait_for


def skiff(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "skiff", *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip


def _store_flags(store_args: list[str]) -> list[str]:
    """The snapshot command's flags for the control plane's store."""
    flags = ["--store", store_args[1]]
    if "--etcd-endpoints" in store_args:
        flags += ["--etcd-endpoints", store_args[store_args.index("--etcd-endpoints") + 1]]
    return flags


def _state(cp: ControlPlane) -> dict[str, Any]:
    """What a restore must bring back exactly: every ConfigMap and Namespace,
    by name, with its uid and data."""
    client = cp.client()
    return {
        f"{kind}/{o['metadata'].get('namespace', '')}/{o['metadata']['name']}": (
            o["metadata"]["uid"],
            o.get("data"),
        )
        for kind in ("ConfigMap", "Namespace")
        for o in client.list(kind).items
    }


def _only(snapshots_dir: Path) -> Path:
    files = [p for p in snapshots_dir.iterdir() if not p.name.startswith(".")]
    assert len(files) == 1, files
    return files[0]


def test_save_change_restore_brings_back_the_snapshot(
    tmp_path: Path, store_args: list[str]
) -> None:
    cp = ControlPlane(tmp_path / "cp", store_args)
    try:
        cp.start()
        client = cp.client()
        client.create("Namespace", {"metadata": {"name": "kept"}})
        client.create("ConfigMap", {"metadata": {"name": "a"}, "data": {"v": "1"}}, "default")
        client.create("ConfigMap", {"metadata": {"name": "b"}, "data": {"v": "1"}}, "kept")
        before = _state(cp)
        saved = skiff("snapshot", "save", "--data-dir", str(cp.data_dir), *_store_flags(store_args))
        assert saved.returncode == 0, saved.stderr
        assert saved.stdout.startswith("Snapshot on-demand-"), saved.stdout
        listed = skiff("snapshot", "ls", "--data-dir", str(cp.data_dir))
        assert listed.stdout.split("\n")[0].split() == ["Name", "Location", "Size", "Created"]
        snapshot = _only(cp.data_dir / "snapshots")
        assert snapshot.name in listed.stdout
        # The change the restore must undo: an update, a delete, a create, a namespace.
        a = client.get("ConfigMap", "a", "default")
        client.update("ConfigMap", {**a, "data": {"v": "2"}})
        client.delete("ConfigMap", "b", "kept")
        client.create("ConfigMap", {"metadata": {"name": "c"}}, "default")
        client.create("Namespace", {"metadata": {"name": "later"}})
        assert _state(cp) != before
        # A restore never runs against a live data dir.
        running = ControlPlane(cp.data_dir, [*store_args, "--cluster-reset",
                                             "--cluster-reset-restore-path", str(snapshot)])  # fmt: skip
        refused = subprocess.run(running.command(), cwd=REPO, capture_output=True, text=True,
                                 timeout=60, check=False)  # fmt: skip
        assert refused.returncode == 1
        assert "in use by a running control plane (pid" in refused.stderr, refused.stderr
        assert client.get("ConfigMap", "c", "default")  # nothing was replaced
        cp.close()
        cp = ControlPlane(cp.data_dir, [*store_args, "--cluster-reset",
                                        "--restore-path", str(snapshot)])  # fmt: skip
        cp.start()
        assert _state(cp) == before
        assert cp.client().get("ConfigMap", "a", "default")["data"] == {"v": "1"}
    finally:
        cp.close()


def test_snapshot_under_write_load_keeps_every_acknowledged_write(
    tmp_path: Path, store_args: list[str]
) -> None:
    cp = ControlPlane(tmp_path / "cp", store_args)
    try:
        cp.start()
        client = cp.client()
        acknowledged: list[str] = []
        stop = threading.Event()
        failures: list[BaseException] = []

        def writer() -> None:
            n = 0
            try:
                while not stop.is_set():
                    name = f"load-{n}"
                    client.create("ConfigMap", {"metadata": {"name": name}, "data": {"n": str(n)}},
                                  "default")  # fmt: skip
                    acknowledged.append(name)  # only after the create returned
                    n += 1
            except ApiError as err:
                failures.append(err)

        thread = threading.Thread(target=writer)
        thread.start()
        try:
            while len(acknowledged) < 50 and thread.is_alive():
                stop.wait(0.05)
            before_snapshot = list(acknowledged)
            saved = skiff("snapshot", "save", "--data-dir", str(cp.data_dir),
                          *_store_flags(store_args))  # fmt: skip
            count_after = len(acknowledged)
            assert saved.returncode == 0, saved.stderr
            # More writes after the snapshot, while it was being taken and after.
            while len(acknowledged) < count_after + 20 and thread.is_alive():
                stop.wait(0.05)
        finally:
            stop.set()
            thread.join(30)
        assert not failures
        assert len(acknowledged) > count_after > len(before_snapshot) >= 50
        snapshot = _only(cp.data_dir / "snapshots")
        cp.close()
        cp = ControlPlane(cp.data_dir, [*store_args, "--cluster-reset",
                                        "--restore-path", str(snapshot)])  # fmt: skip
        cp.start()
        restored = {o["metadata"]["name"] for o in cp.client().list("ConfigMap", "default").items}
        missing = [n for n in before_snapshot if n not in restored]
        assert not missing, f"acknowledged before the snapshot, lost: {missing[:10]}"
        # Consistent: what it holds is a prefix of the writer's sequence, no gaps.
        loads = sorted(int(n.split("-")[1]) for n in restored if n.startswith("load-"))
        assert loads == list(range(len(loads)))
        assert len(loads) <= count_after
    finally:
        cp.close()


def test_the_control_plane_takes_scheduled_snapshots_and_keeps_the_retention(
    tmp_path: Path,
) -> None:
    cp = ControlPlane(tmp_path / "cp", ["--store", "sqlite", "--snapshot-schedule-cron",
                                        "* * * * *", "--snapshot-retention", "1"])  # fmt: skip
    try:
        cp.start()
        cp.client().create("ConfigMap", {"metadata": {"name": "scheduled"}}, "default")
        snapshots = cp.data_dir / "snapshots"

        def taken() -> list[str]:
            if not snapshots.is_dir():
                return []
            return sorted(
                p.name for p in snapshots.iterdir() if p.name.startswith("etcd-snapshot-")
            )

        first = wait_for(taken, timeout=75, message="a scheduled snapshot")
        assert first is not None
        second = wait_for(lambda: [n for n in taken() if n not in first], timeout=75,
                          message="the next scheduled snapshot")  # fmt: skip
        assert second is not None
        wait_for(lambda: len(taken()) == 1, timeout=10, message="pruned to the retention")
    finally:
        cp.close()
    bad = ControlPlane(tmp_path / "bad", ["--snapshot-schedule-cron", "every day"])
    res = subprocess.run(bad.command(), cwd=REPO, capture_output=True, text=True, timeout=60,
                         check=False)  # fmt: skip
    assert res.returncode == 1 and "--snapshot-schedule-cron 'every day'" in res.stderr
