import base64
import os
from pathlib import Path
from typing import Any

import pytest

from agent.pod_config import ConfigError, NodeSettings
from agent.volumes import (
    VolumeSources,
    container_mounts,
    refresh_volumes,
    setup_volumes,
    teardown_volumes,
    write_atomic_dir,
)
from proto.runtime.v1 import api_pb2 as cri

CMS = {("ns", "cfg"): {"data": {"app.conf": "port=80", "other": "x"}}}
SECRETS = {("ns", "creds"): {"data": {"password": base64.b64encode(b"s3cret").decode()}}}
SRC = VolumeSources(
    configmaps=lambda ns, n: CMS.get((ns, n)),
    secrets=lambda ns, n: SECRETS.get((ns, n)),
    node=NodeSettings(node_name="n1"),
)


def make_pod(*volumes: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "uid-1", "labels": {"app": "web"}},
        "spec": {"volumes": list(volumes), "containers": []},
    }


def test_file_volumes(tmp_path: Path) -> None:
    host = tmp_path / "host" / "data"
    pod = make_pod(
        {"name": "scratch", "emptyDir": {}},
        {
            "name": "cfg",
            "configMap": {"name": "cfg", "items": [{"key": "app.conf", "path": "conf/app.conf"}]},
        },
        {"name": "sec", "secret": {"secretName": "creds", "defaultMode": 0o400}},
        {
            "name": "info",
            "downwardAPI": {
                "items": [
                    {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
                    {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                ]
            },
        },
        {
            "name": "proj",
            "projected": {
                "sources": [{"configMap": {"name": "cfg"}}, {"secret": {"name": "creds"}}]
            },
        },
        {"name": "hp", "hostPath": {"path": str(host), "type": "DirectoryOrCreate"}},
    )
    paths = setup_volumes(tmp_path / "agent", pod, SRC)
    assert Path(paths["scratch"]).is_dir()
    assert (Path(paths["cfg"]) / "conf" / "app.conf").read_text() == "port=80"
    assert not (Path(paths["cfg"]) / "other").exists()
    secret_file = Path(paths["sec"]) / "password"
    assert secret_file.read_text() == "s3cret"
    assert (os.stat(secret_file).st_mode & 0o777) == 0o400
    assert (Path(paths["info"]) / "name").read_text() == "p"
    assert (Path(paths["info"]) / "labels").read_text() == 'app="web"'
    assert sorted(os.listdir(paths["proj"]))[-3:] == ["app.conf", "other", "password"]
    assert paths["hp"] == str(host) and host.is_dir()
    teardown_volumes(tmp_path / "agent", "uid-1")
    assert not (tmp_path / "agent" / "pods" / "uid-1").exists()
    assert host.is_dir()


def test_atomic_update_replaces_and_drops_files(tmp_path: Path) -> None:
    target = tmp_path / "v"
    write_atomic_dir(target, {"a": (b"1", None), "b": (b"2", None)}, 0o644)
    first = os.readlink(target / "..data")
    assert first.startswith("..20")  # timestamped, as the kubelet's
    write_atomic_dir(target, {"a": (b"3", None)}, 0o644)
    assert (target / "a").read_text() == "3"
    assert not (target / "b").exists()
    assert os.readlink(target / "..data") != first and not (target / first).exists()


def test_missing_sources_and_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match='volume v: configmap "nope" not found'):
        setup_volumes(tmp_path, make_pod({"name": "v", "configMap": {"name": "nope"}}), SRC)
    assert setup_volumes(
        tmp_path, make_pod({"name": "v", "configMap": {"name": "nope", "optional": True}}), SRC
    )
    with pytest.raises(ConfigError, match="does not exist"):
        setup_volumes(
            tmp_path,
            make_pod({"name": "v", "hostPath": {"path": str(tmp_path / "x"), "type": "Directory"}}),
            SRC,
        )
    with pytest.raises(ConfigError, match=r"without '\.\.'"):
        setup_volumes(
            tmp_path,
            make_pod(
                {
                    "name": "v",
                    "configMap": {"name": "cfg", "items": [{"key": "other", "path": "../escape"}]},
                }
            ),
            SRC,
        )


def test_container_mounts(tmp_path: Path) -> None:
    paths = {"data": str(tmp_path)}
    c = {
        "name": "c",
        "volumeMounts": [
            {"name": "data", "mountPath": "/data", "readOnly": True},
            {
                "name": "data",
                "mountPath": "/sub",
                "subPath": "x/y",
                "mountPropagation": "HostToContainer",
            },
        ],
    }
    mounts = container_mounts(c, paths)
    assert [(m.container_path, m.host_path, m.readonly) for m in mounts] == [
        ("/data", str(tmp_path), True),
        ("/sub", str(tmp_path / "x/y"), False),
    ]
    assert mounts[1].propagation == cri.PROPAGATION_HOST_TO_CONTAINER
    assert (tmp_path / "x" / "y").is_dir()
    with pytest.raises(ConfigError, match="names no volume"):
        container_mounts(
            {"name": "c", "volumeMounts": [{"name": "nope", "mountPath": "/x"}]}, paths
        )
    with pytest.raises(ConfigError, match="subPath"):
        container_mounts(
            {
                "name": "c",
                "volumeMounts": [{"name": "data", "mountPath": "/x", "subPath": "../../etc"}],
            },
            paths,
        )


def test_binary_secret_and_configmap_values_arrive_byte_for_byte(tmp_path: Path) -> None:
    blob = bytes(range(256)) * 16  # 4 KiB, every byte value, not UTF-8
    secrets = {("ns", "bin"): {"data": {"key.p12": base64.b64encode(blob).decode()}}}
    cms = {("ns", "gz"): {"binaryData": {"a.gz": base64.b64encode(blob[::-1]).decode()}}}
    src = VolumeSources(
        configmaps=lambda ns, n: cms.get((ns, n)),
        secrets=lambda ns, n: secrets.get((ns, n)),
        node=NodeSettings(node_name="n1"),
    )
    pod = make_pod(
        {"name": "s", "secret": {"secretName": "bin"}}, {"name": "c", "configMap": {"name": "gz"}}
    )
    paths = setup_volumes(tmp_path, pod, src)
    assert (Path(paths["s"]) / "key.p12").read_bytes() == blob
    assert (Path(paths["c"]) / "a.gz").read_bytes() == blob[::-1]


def test_refresh_follows_edits_and_keeps_the_last_content_of_a_deleted_source(
    tmp_path: Path,
) -> None:
    cms: dict[tuple[str, str], Any] = {("ns", "cfg"): {"data": {"a": "1", "b": "2"}}}
    src = VolumeSources(
        configmaps=lambda ns, n: cms.get((ns, n)),
        secrets=lambda ns, n: None,
        node=NodeSettings(node_name="n1"),
    )
    pod = make_pod(
        {"name": "v", "configMap": {"name": "cfg"}},
        {"name": "d", "downwardAPI": {"items": [
            {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
    )  # fmt: skip
    paths = setup_volumes(tmp_path, pod, src)
    v = Path(paths["v"])
    first = os.readlink(v / "..data")
    assert refresh_volumes(tmp_path, pod, src) == (0, {})  # nothing changed: nothing written
    assert os.readlink(v / "..data") == first
    cms[("ns", "cfg")] = {"data": {"a": "one"}}
    pod["metadata"]["labels"] = {"app": "web", "tier": "front"}
    assert refresh_volumes(tmp_path, pod, src) == (2, {})
    assert (v / "a").read_text() == "one" and not (v / "b").exists()
    assert (v / "a").is_symlink() and os.readlink(v / "a") == "..data/a"
    assert (Path(paths["d"]) / "labels").read_text() == 'app="web"\ntier="front"'
    del cms[("ns", "cfg")]
    assert refresh_volumes(tmp_path, pod, src) == (0, {"v": 'volume v: configmap "cfg" not found'})
    assert (v / "a").read_text() == "one"


def test_a_terminated_pod_loses_its_volumes_but_keeps_its_dir(tmp_path: Path) -> None:
    pod = make_pod({"name": "scratch", "emptyDir": {}})
    paths = setup_volumes(tmp_path, pod, SRC)
    (Path(paths["scratch"]) / "big").write_bytes(b"x" * 4096)
    teardown_volumes(tmp_path, "uid-1", keep_pod_dir=True)
    assert not Path(paths["scratch"]).exists()
    assert (tmp_path / "pods" / "uid-1").is_dir()
