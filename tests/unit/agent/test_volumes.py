import base64
import os
from pathlib import Path
from typing import Any

import pytest

from agent.pod_config import ConfigError, NodeSettings
from agent.volumes import (
    VolumeSources,
    container_mounts,
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
    write_atomic_dir(target, {"a": ("1", None), "b": ("2", None)}, 0o644)
    first = os.readlink(target / "..data")
    write_atomic_dir(target, {"a": ("3", None)}, 0o644)
    assert (target / "a").read_text() == "3"
    assert not (target / "b").exists()
    assert os.readlink(target / "..data") != first and not (target / first).exists()


def test_missing_sources_and_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="configmap ns/nope not found"):
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
