"""The data directory's version record: a newer format refused, an older one migrated."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from controlplane.datadir import STORAGE_FORMAT, DataDirError, check_version, skiff_version
from controlplane.dataprep import claim, settle
from controlplane.migrate import migrate
from controlplane.storage.sqlite import SqliteStore

HPA_V1 = {
    "apiVersion": "autoscaling/v1",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 1,
        "maxReplicas": 4,
        "targetCPUUtilizationPercentage": 60,
    },
}
KEY = "/registry/horizontalpodautoscalers.autoscaling/default/web"


def _args(**kw: object) -> argparse.Namespace:
    base = {"store": "sqlite", "cluster_reset": False, "cluster_reset_restore_path": "",
            "disable_snapshots": True, "etcd_endpoints": "", "etcd_prefix": "/skiff"}  # fmt: skip
    return argparse.Namespace(**{**base, **kw})


def test_a_newer_storage_format_is_refused_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "version.json").write_text(
        json.dumps({"skiffVersion": "9.0.0", "storageFormat": 9})
    )
    with pytest.raises(DataDirError) as err:
        claim(_args(), tmp_path)
    text = str(err.value)
    assert "last used by skiff 9.0.0 (storage format 9)" in text
    assert f"this skiff {skiff_version()} knows storage formats up to {STORAGE_FORMAT}" in text
    assert "a downgrade is not supported" in text
    (tmp_path / "version.json").unlink()
    lock, found = claim(_args(), tmp_path)  # the lock is free again
    lock.release()
    assert found is None  # a fresh directory


def test_a_data_dir_without_a_record_is_the_legacy_format_and_is_migrated(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "state.db")
    store.create(KEY, json.dumps(HPA_V1).encode())
    store.create("/registry/configmaps/default/c", json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}).encode())  # fmt: skip
    store.close()
    found = check_version(tmp_path, has_state=True)
    assert found is not None and found.storage_format == 1
    store = SqliteStore(tmp_path / "state.db")
    try:
        assert settle(store, tmp_path, found) == 1  # the HPA only
        hpa = json.loads(store.get(KEY).value)
        assert hpa["apiVersion"] == "autoscaling/v2"
        assert "targetCPUUtilizationPercentage" not in hpa["spec"]
        assert hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 60
        assert hpa["metadata"]["uid"] == "u1"
        assert migrate(store, 1) == 0  # idempotent: nothing left to convert
    finally:
        store.close()
    record = json.loads((tmp_path / "version.json").read_text())
    assert record == {"skiffVersion": skiff_version(), "storageFormat": STORAGE_FORMAT}
    again = check_version(tmp_path, has_state=True)
    assert again is not None and again.storage_format == STORAGE_FORMAT


def test_cluster_reset_needs_a_snapshot(tmp_path: Path) -> None:
    with pytest.raises(DataDirError, match="--cluster-reset needs --cluster-reset-restore-path"):
        claim(_args(cluster_reset=True), tmp_path)


def test_a_bad_snapshot_schedule_is_refused_at_start(tmp_path: Path) -> None:
    args = _args(disable_snapshots=False, snapshot_schedule_cron="61 * * * *", snapshot_retention=5)
    with pytest.raises(DataDirError, match="--snapshot-schedule-cron '61 \\* \\* \\* \\*'"):
        claim(args, tmp_path)
    args = _args(
        disable_snapshots=False, snapshot_schedule_cron="0 */12 * * *", snapshot_retention=0
    )
    with pytest.raises(DataDirError, match="--snapshot-retention 0"):
        claim(args, tmp_path)
