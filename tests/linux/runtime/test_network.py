"""Pods on a real CNI network (the reference bridge + host-local plugins
from /usr/lib/cni): the runtime reports NetworkReady, the pod gets an IP the
host can reach, and stopping the pod tears the network down."""

from __future__ import annotations

import ipaddress
import json
import secrets
import subprocess
import urllib.request
from pathlib import Path

import pytest

from proto.runtime.v1 import api_pb2
from tests.harness.nodeprocs import free_pod_cidr
from tests.harness.wait import wait_for
from tests.linux.runtime.harness import container_config, running_runtime
from tests.linux.runtime.test_containers import started
from tests.linux.runtime.test_lifecycle import run_pod

pytestmark = [pytest.mark.root, pytest.mark.netns]

CNI_BIN = Path("/usr/lib/cni")


@pytest.mark.skipif(not (CNI_BIN / "bridge").exists(), reason="reference CNI plugins not installed")
def test_pod_on_cni_bridge(tmp_path: Path, busybox_rootfs: Path) -> None:
    bridge = "skbr" + secrets.token_hex(4)
    subnet = free_pod_cidr()  # reserved: never another test's, nor a route here
    conf = tmp_path / "net.d"
    conf.mkdir()
    (conf / "10-test.conflist").write_text(json.dumps({
        "cniVersion": "1.0.0",
        "name": "skiff-test",
        "plugins": [{
            "type": "bridge", "bridge": bridge, "isGateway": True, "ipMasq": False,
            "ipam": {"type": "host-local", "dataDir": str(tmp_path / "ipam"),
                     "ranges": [[{"subnet": subnet}]]},
        }],
    }))  # fmt: skip
    try:
        with running_runtime(
            tmp_path / "rt",
            busybox_rootfs,
            "--cni-conf-dir",
            str(conf),
            "--cni-bin-dir",
            str(CNI_BIN),
        ) as r:
            conds = {
                c.type: c.status for c in r.rt.Status(api_pb2.StatusRequest()).status.conditions
            }
            assert conds["NetworkReady"]
            sid, pcfg = run_pod(r, tmp_path, "net")
            st = r.rt.PodSandboxStatus(api_pb2.PodSandboxStatusRequest(pod_sandbox_id=sid)).status
            ip = st.network.ip
            assert ipaddress.ip_address(ip) in ipaddress.ip_network(subnet)
            www = tmp_path / "www"
            www.mkdir()
            (www / "index.html").write_text("hello from the pod\n")
            mount = api_pb2.Mount(container_path="/www", host_path=str(www), readonly=True)
            started(
                r,
                sid,
                pcfg,
                container_config("web", ["httpd", "-f", "-p", "80", "-h", "/www"], mounts=[mount]),
            )

            def fetch() -> bytes:
                with urllib.request.urlopen(f"http://{ip}/index.html", timeout=2) as resp:
                    body: bytes = resp.read()
                    return body

            assert (
                wait_for(fetch, timeout=10, message="HTTP from the pod") == b"hello from the pod\n"
            )
            r.rt.StopPodSandbox(api_pb2.StopPodSandboxRequest(pod_sandbox_id=sid))
            assert not list((tmp_path / "ipam" / "skiff-test").glob("10.*"))
            r.rt.RemovePodSandbox(api_pb2.RemovePodSandboxRequest(pod_sandbox_id=sid))
    finally:
        subprocess.run(["ip", "link", "del", bridge], check=False, capture_output=True)
