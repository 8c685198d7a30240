"""The agent's storage helpers without a control plane: quota support, safe paths,
fsGroup ownership, read-only claim mounts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agent.claims import apply_fs_group, read_only_mounts
from agent.local_path import LocalPathError, LocalPathVolumes, Mount, mount_of, quota_plan
from controlplane.api import volumes as v
from proto.runtime.v1 import api_pb2 as cri


def pv(name: str, path: str, size: str = "1Mi") -> dict[str, Any]:
    return {
        "metadata": {"name": name,
                     "annotations": {v.PROVISIONED_BY_ANNOTATION: v.LOCAL_PATH_PROVISIONER}},
        "spec": {"capacity": {"storage": size}, "local": {"path": path},
                 "nodeAffinity": v.node_affinity_for("n1")},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("fstype", "options", "tools", "why"),
    [
        ("ext4", {"rw"}, {}, "ext4 at /m is not mounted with prjquota"),
        (
            "ext4",
            {"prjquota"},
            {"setquota": None, "chattr": "x"},
            "setquota or chattr is not installed",
        ),
        ("ext4", {"prjquota"}, {"setquota": "x", "chattr": "x"}, ""),
        ("xfs", {"pquota"}, {"xfs_quota": "x"}, ""),
        ("xfs", {"rw"}, {"xfs_quota": "x"}, "xfs at /m is not mounted with prjquota"),
        ("overlay", set(), {}, "overlay at /m has no project quotas (xfs or ext4 with prjquota)"),
    ],
)
def test_quota_plan_says_why_not(
    fstype: str, options: set[str], tools: dict[str, Any], why: str
) -> None:
    assert quota_plan(Mount("/m", fstype, frozenset(options), "/dev/x"), tools) == why


def test_mount_of_picks_the_longest_mount_point(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(
        "22 1 0:1 / / rw - ext4 /dev/vda rw\n"
        "23 22 0:2 / /srv rw,relatime - xfs /dev/vdb rw,prjquota\n"
    )
    m = mount_of("/srv/volumes/pv1", str(info))
    assert (m.point, m.fstype) == ("/srv", "xfs") and "prjquota" in m.options
    assert mount_of("/etc", str(info)).fstype == "ext4"


def test_directories_made_and_removed_only_under_the_root(tmp_path: Path) -> None:
    vols = LocalPathVolumes(tmp_path / "root")
    good = pv("pvc-1", str(tmp_path / "root" / "pvc-1"))
    statement = vols.ensure(good)
    assert statement.startswith(("enforced", "not enforced: "))
    path = tmp_path / "root" / "pvc-1"
    # Not 0777 (issue 32): no host user who learns the path reads or writes it.
    assert path.is_dir() and (path.stat().st_mode & 0o777) == 0o770
    path.chmod(0o777)  # made by an older agent
    vols.ensure(good)
    assert path.stat().st_mode & 0o777 == 0o770
    (path / "f").write_text("data")
    vols.remove(good)
    assert not path.exists()
    vols.remove(good)  # gone already: fine
    for bad in (str(tmp_path / "elsewhere"), str(tmp_path / "root" / "pvc-1" / ".."), "/etc"):
        with pytest.raises(LocalPathError):
            vols.ensure(pv("pvc-1", bad))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    (tmp_path / "root" / "pvc-2").symlink_to(outside)
    link = pv("pvc-2", str(tmp_path / "root" / "pvc-2"))
    with pytest.raises(LocalPathError):
        vols.ensure(link)
    vols.remove(link)
    assert (outside / "keep").exists()  # the link went, not what it pointed to


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another group needs root")
def test_fs_group_ownership(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("x")
    os.chmod(tmp_path / "d" / "f", 0o600)
    apply_fs_group(tmp_path / "d", 1234)
    st = (tmp_path / "d").stat()
    assert st.st_gid == 1234 and st.st_mode & 0o2000
    f = (tmp_path / "d" / "f").stat()
    assert f.st_gid == 1234 and f.st_mode & 0o060 == 0o060
    (tmp_path / "d" / "g").write_text("y")
    os.chmod(tmp_path / "d" / "g", 0o600)
    apply_fs_group(tmp_path / "d", 1234, "OnRootMismatch")  # the root has it: not walked
    assert (tmp_path / "d" / "g").stat().st_mode & 0o060 == 0
    apply_fs_group(tmp_path / "d", 1234)
    assert (tmp_path / "d" / "g").stat().st_mode & 0o060 == 0o060


def test_read_only_claim_mounts() -> None:
    pod = {"spec": {"volumes": [
        {"name": "ro", "persistentVolumeClaim": {"claimName": "a", "readOnly": True}},
        {"name": "rw", "persistentVolumeClaim": {"claimName": "b"}},
    ]}}  # fmt: skip
    container = {
        "volumeMounts": [{"name": "rw", "mountPath": "/w"}, {"name": "ro", "mountPath": "/r"}]
    }
    mounts = [cri.Mount(container_path="/w"), cri.Mount(container_path="/r")]
    read_only_mounts(pod, container, mounts)
    assert [m.readonly for m in mounts] == [False, True]


def test_claim_volumes_follow_the_claim_or_say_why_not(tmp_path: Path) -> None:
    from agent.claims import ClaimVolumes
    from agent.pod_config import ConfigError
    from tests.fakes.fake_apiclient import FakeApiClient

    api = FakeApiClient()
    claims = ClaimVolumes(api, "n1", LocalPathVolumes(tmp_path / "root"))
    pod = {"metadata": {"name": "p", "namespace": "default", "uid": "u1"}, "spec": {}}

    def vol(claim: str) -> dict[str, Any]:
        return {"name": "d", "persistentVolumeClaim": {"claimName": claim}}

    def bound(name: str, volume: str) -> None:
        api.create(
            "PersistentVolumeClaim",
            {"metadata": {"name": name, "namespace": "default"},
             "spec": {"volumeName": volume}, "status": {"phase": "Bound"}},
        )  # fmt: skip

    with pytest.raises(ConfigError, match='persistentvolumeclaim "nope" not found'):
        claims.path(pod, vol("nope"))
    api.create("PersistentVolumeClaim", {"metadata": {"name": "wait", "namespace": "default"},
                                         "status": {"phase": "Pending"}})  # fmt: skip
    with pytest.raises(ConfigError, match='waiting for persistentvolumeclaim "wait" to be bound'):
        claims.path(pod, vol("wait"))
    reasons = [e["reason"] for e in api.objects("Event", "default")]
    assert reasons == ["FailedMount", "FailedMount"]
    with pytest.raises(ConfigError):
        claims.path(pod, vol("wait"))
    assert len(api.objects("Event", "default")) == 2  # the same message is not written twice

    host = tmp_path / "host" / "dir"
    api.create("PersistentVolume", {"metadata": {"name": "hp"}, "spec": {
        "hostPath": {"path": str(host), "type": "DirectoryOrCreate"}}}, None)  # fmt: skip
    bound("h", "hp")
    assert claims.path(pod, vol("h")) == str(host) and host.is_dir()

    elsewhere = pv("pvc-x", str(tmp_path / "root" / "pvc-x"))
    elsewhere["spec"]["nodeAffinity"] = v.node_affinity_for("n2")
    api.create("PersistentVolume", elsewhere, None)
    bound("far", "pvc-x")
    with pytest.raises(ConfigError, match="is pinned to n2, not n1"):
        claims.path(pod, vol("far"))

    mine = pv("pvc-y", str(tmp_path / "root" / "pvc-y"))
    api.create("PersistentVolume", mine, None)
    bound("near", "pvc-y")
    assert claims.path(pod, vol("near")) == str(tmp_path / "root" / "pvc-y")
    assert (tmp_path / "root" / "pvc-y").is_dir()  # made here if the provisioner had not yet
