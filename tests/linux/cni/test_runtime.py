"""skiff's CRI runtime running a pod on skiff-cni, as critest does it: the
pod gets an IP from skiff-ipam, serves HTTP on it, and its hostPort answers
at 127.0.0.1 on the node; stopping the pod removes its NAT rules and frees
its address. The runtime runs inside a test-made "node" namespace, so the
bridge and rules never touch the root namespace.

Uses the runtime tests' harness (tests/linux/runtime) to start the runtime.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import urllib.request
from functools import partial
from pathlib import Path

import pytest

from proto.runtime.v1 import api_pb2
from tests.harness.ports import free_port
from tests.harness.wait import wait_for
from tests.linux.cni.helpers import REF_BIN, bridge_conf, in_netns
from tests.linux.runtime.harness import build_busybox_rootfs, container_config, running_runtime

pytestmark = [pytest.mark.root, pytest.mark.netns]


@pytest.fixture(scope="session")
def busybox_rootfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_busybox_rootfs(tmp_path_factory.mktemp("images") / "busybox")


def test_runtime_pod_with_host_port_on_skiff_cni(
    tmp_path: Path, busybox_rootfs: Path, cni_bin: Path, node: str
) -> None:
    plugin = bridge_conf(tmp_path, "10.250.60.0/24", hairpinMode=True, isDefaultGateway=True)
    plugin["capabilities"] = {"portMappings": True}
    name = plugin.pop("name")
    plugin.pop("cniVersion")
    conf_dir = tmp_path / "net.d"
    conf_dir.mkdir()
    (conf_dir / "10-skiff.conflist").write_text(
        json.dumps({"cniVersion": "1.0.0", "name": name, "plugins": [plugin]})
    )
    host_port = free_port()  # a reserved port, as every test takes one
    www = tmp_path / "www"
    www.mkdir()
    (www / "index.html").write_text("hello from the pod\n")
    with (
        in_netns(node),
        running_runtime(
            tmp_path / "rt",
            busybox_rootfs,
            "--cni-conf-dir",
            str(conf_dir),
            "--cni-bin-dir",
            str(cni_bin),
            "--cni-bin-dir",
            str(REF_BIN),
        ) as r,
    ):
        conds = {c.type: c.status for c in r.rt.Status(api_pb2.StatusRequest()).status.conditions}
        assert conds["NetworkReady"]
        pcfg = api_pb2.PodSandboxConfig(
            metadata=api_pb2.PodSandboxMetadata(
                name="web", uid=secrets.token_hex(8), namespace="default"
            ),
            hostname="web",
            log_directory=str(tmp_path / "logs"),
            port_mappings=[api_pb2.PortMapping(container_port=80, host_port=host_port)],
        )
        sid = r.rt.RunPodSandbox(api_pb2.RunPodSandboxRequest(config=pcfg)).pod_sandbox_id
        status = r.rt.PodSandboxStatus(api_pb2.PodSandboxStatusRequest(pod_sandbox_id=sid)).status
        ip = status.network.ip
        assert ip.startswith("10.250.60.")
        mount = api_pb2.Mount(container_path="/www", host_path=str(www), readonly=True)
        web = container_config("web", ["httpd", "-f", "-p", "80", "-h", "/www"], mounts=[mount])
        cid = r.rt.CreateContainer(
            api_pb2.CreateContainerRequest(pod_sandbox_id=sid, config=web, sandbox_config=pcfg)
        ).container_id
        r.rt.StartContainer(api_pb2.StartContainerRequest(container_id=cid))

        def fetch(url: str) -> bytes:
            with urllib.request.urlopen(url, timeout=2) as resp:
                body: bytes = resp.read()
                return body

        for url in (f"http://{ip}/index.html", f"http://127.0.0.1:{host_port}/index.html"):
            assert wait_for(partial(fetch, url), timeout=10, message=url) == b"hello from the pod\n"
        r.rt.StopPodSandbox(api_pb2.StopPodSandboxRequest(pod_sandbox_id=sid))
        rules = subprocess.run(
            ["iptables-save", "-t", "nat"], capture_output=True, text=True, check=True
        ).stdout
        assert "SKIFF" not in rules
        assert [f for f in os.listdir(tmp_path / "ipam" / name) if f[0].isdigit()] == []
        r.rt.RemovePodSandbox(api_pb2.RemovePodSandboxRequest(pod_sandbox_id=sid))
