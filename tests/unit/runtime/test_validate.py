"""Injection through CRI and CNI fields (issue 17): every field that reaches
a file, CNI_ARGS, a path, a command line or an iptables-restore script is
refused at the RPC boundary with INVALID_ARGUMENT naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.cni import iptables
from runtime.cni.skel import CNIError, parse_cni_args
from runtime.config import Config
from runtime.cri import container_create, sandbox_run
from runtime.cri.service import RuntimeService
from runtime.network.cni_client import CNIClient
from tests.fakes.fake_host import FakeHost
from tests.fakes.image_store import FakeImageStore


def service(tmp_path: Path) -> tuple[RuntimeService, FakeHost]:
    host = FakeHost()
    cfg = Config(root=tmp_path / "root", state=tmp_path / "state", cgroup_root=tmp_path / "cg")
    return RuntimeService(cfg, FakeImageStore(tmp_path / "images"), None, host), host


def pod(**kw: object) -> api_pb2.PodSandboxConfig:
    cfg = api_pb2.PodSandboxConfig(
        metadata=api_pb2.PodSandboxMetadata(name="web-0", uid="0b5c-11", namespace="default"),
        hostname="web-0",
    )
    for path, value in kw.items():
        target: object = cfg
        *parents, leaf = path.split("__")
        for p in parents:
            target = getattr(target, p)
        setattr(target, leaf, value)
    return cfg


BAD_SANDBOXES = [
    # (field named in the error, the config)
    ("metadata.name", pod(metadata__name="p;IP=10.0.0.9")),
    ("metadata.name", pod(metadata__name="../../etc")),
    ("metadata.name", pod(metadata__name="web\n")),  # (found by the fuzz run: `$` before a newline)
    ("metadata.namespace", pod(metadata__namespace="ns;K8S_POD_NAME=x")),
    ("metadata.uid", pod(metadata__uid="u/../../x")),
    ("hostname", pod(hostname="web\n10.0.0.1 evil.example")),
    ("log_directory", pod(log_directory="/var/log/pods/../../../etc")),
    ("linux.cgroup_parent", pod(linux__cgroup_parent="/kubepods/../../system.slice")),
    ("dns_config.servers", pod()),  # an IPv6 zone with a newline (issue 32)
    ("dns_config.servers", pod()),
    ("port_mappings[0].host_ip", pod()),
]
BAD_SANDBOXES[-3][1].dns_config.servers.append("fe80::1%eth0\nnameserver 6.6.6.6")
BAD_SANDBOXES[-2][1].dns_config.servers.append("10.0.0.10\nnameserver 6.6.6.6")
BAD_SANDBOXES[-1][1].port_mappings.append(
    api_pb2.PortMapping(host_port=8080, container_port=80, host_ip="0.0.0.0\n-A INPUT -j ACCEPT")
)


@pytest.mark.parametrize(("field", "cfg"), BAD_SANDBOXES, ids=[f for f, _ in BAD_SANDBOXES])
def test_bad_sandbox_fields_refused_before_the_host(
    tmp_path: Path, field: str, cfg: api_pb2.PodSandboxConfig
) -> None:
    svc, host = service(tmp_path)
    with pytest.raises(errors.InvalidArgument) as info:
        sandbox_run.run(svc, api_pb2.RunPodSandboxRequest(config=cfg))
    assert str(info.value).startswith(field)
    assert host.steps == 0  # refused before anything was made


def test_good_sandbox_names_pass(tmp_path: Path) -> None:
    # what Kubernetes admits and what critest sends
    svc, host = service(tmp_path)
    cfg = pod(metadata__name="create-PodSandbox-for-container-1a2b", hostname="web-0.svc")
    cfg.port_mappings.append(api_pb2.PortMapping(host_port=80, container_port=80, host_ip="::1"))
    sandbox_run.run(svc, api_pb2.RunPodSandboxRequest(config=cfg))
    assert host.steps > 0


@pytest.mark.parametrize(
    ("field", "kw"),
    [
        ("log_path", {"log_path": "/etc/cron.d/x"}),
        ("log_path", {"log_path": "c/../../../../etc/shadow"}),
        ("metadata.name", {"name": "c;rm"}),
        ("working_dir", {"working_dir": "/app\n"}),
    ],
)
def test_bad_container_fields(tmp_path: Path, field: str, kw: dict[str, str]) -> None:
    svc, _ = service(tmp_path)
    cfg = api_pb2.ContainerConfig(
        metadata=api_pb2.ContainerMetadata(name=kw.pop("name", "c")),
        image=api_pb2.ImageSpec(image="busybox"),
    )
    for key, value in kw.items():
        setattr(cfg, key, value)
    with pytest.raises(errors.InvalidArgument, match=field):
        container_create.run(svc, api_pb2.CreateContainerRequest(pod_sandbox_id="any", config=cfg))


def test_host_ip_newline_never_reaches_iptables_restore() -> None:
    evil = {"hostPort": 8080, "containerPort": 80, "hostIP": "0.0.0.0\n-A INPUT -j ACCEPT"}
    with pytest.raises(CNIError, match="hostIP"):
        iptables.hostport_lines("c1", "note", "10.88.0.5", [evil])
    ok = iptables.hostport_lines("c1", "n", "10.88.0.5", [{**evil, "hostIP": "127.0.0.1"}])
    assert all("\n" not in line for line in ok)
    assert any("-d 127.0.0.1/32" in line for line in ok)


def test_cni_args_refuse_injected_pairs() -> None:
    with pytest.raises(ValueError, match="K8S_POD_NAME"):
        CNIClient._cni_args("sid", "p;IP=10.0.0.9", "default", "uid")
    with pytest.raises(CNIError, match="CNI_ARGS"):
        parse_cni_args("K8S_POD_NAME=p\nIP=1")
    assert parse_cni_args("IgnoreUnknown=1;K8S_POD_NAME=p") == {
        "IgnoreUnknown": "1",
        "K8S_POD_NAME": "p",
    }
