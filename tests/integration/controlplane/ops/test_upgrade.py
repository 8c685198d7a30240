"""A data dir made by this code, marked as the older (unrecorded) format, upgraded in
place by `skiff controlplane`; a data dir of a newer format refused (a downgrade)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

from controlplane.api.kinds.autoscaling.horizontalpodautoscaler import to_v1
from controlplane.datadir import STORAGE_FORMAT, skiff_version
from tests.harness.controlplane import REPO, ControlPlane

HPA = {
    "metadata": {"name": "web"},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 1,
        "maxReplicas": 3,
        "metrics": [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}],
    },
}  # fmt: skip


def _stored(data_dir: Path, like: str) -> tuple[str, dict[str, object]]:
    db = sqlite3.connect(data_dir / "state.db")
    try:
        key, value = db.execute(
            "SELECT key, value FROM objects WHERE key LIKE ?", (like,)
        ).fetchone()
    finally:
        db.close()
    return key, json.loads(value)


def test_an_older_data_dir_is_migrated_in_place_and_a_newer_one_refused(tmp_path: Path) -> None:
    cp = ControlPlane(tmp_path / "cp", ["--store", "sqlite"])
    try:
        cp.start()
        client = cp.client()
        client.create("ConfigMap", {"metadata": {"name": "kept"}, "data": {"k": "v"}}, "default")
        uid = client.create("HorizontalPodAutoscaler", HPA, "default")["metadata"]["uid"]
        cp.close()
        record = json.loads((cp.data_dir / "version.json").read_text())
        assert record == {"skiffVersion": skiff_version(), "storageFormat": STORAGE_FORMAT}
        # Make it the older format: no version record, the HPA as an older skiff stored it.
        (cp.data_dir / "version.json").unlink()
        key, stored = _stored(cp.data_dir, "%horizontalpodautoscalers%")
        db = sqlite3.connect(cp.data_dir / "state.db")
        db.execute(
            "UPDATE objects SET value=? WHERE key=?", (json.dumps(to_v1(stored)).encode(), key)
        )
        db.commit()
        db.close()
        assert (
            _stored(cp.data_dir, "%horizontalpodautoscalers%")[1]["apiVersion"] == "autoscaling/v1"
        )

        cp = ControlPlane(cp.data_dir, ["--store", "sqlite"])
        cp.start()
        hpa = cp.client().get("HorizontalPodAutoscaler", "web", "default")
        assert hpa["metadata"]["uid"] == uid
        assert hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 70
        assert cp.client().get("ConfigMap", "kept", "default")["data"] == {"k": "v"}
        cp.close()
        stored = _stored(cp.data_dir, "%horizontalpodautoscalers%")[1]
        assert stored["apiVersion"] == "autoscaling/v2"  # rewritten in the storage version
        assert (
            json.loads((cp.data_dir / "version.json").read_text())["storageFormat"]
            == STORAGE_FORMAT
        )
        assert (
            "data directory migrated from storage format 1: 1 objects rewritten"
            in cp.log_path.read_text()
        )

        # A newer skiff's data dir: refused, with the reason, nothing touched.
        newer = {"skiffVersion": "99.0.0", "storageFormat": STORAGE_FORMAT + 1}
        (cp.data_dir / "version.json").write_text(json.dumps(newer))
        before = (cp.data_dir / "state.db").read_bytes()
        res = subprocess.run(cp.command(), cwd=REPO, capture_output=True, text=True, timeout=60,
                             check=False)  # fmt: skip
        assert res.returncode == 1
        assert (
            "last used by skiff 99.0.0" in res.stderr
            and "a downgrade is not supported" in res.stderr
        )
        assert (cp.data_dir / "state.db").read_bytes() == before
    finally:
        cp.close()
