"""skiffctl's streaming stack, all in-process and without root:
runtime.streaming's server with its host-process backend (commands run as
host processes), the agent's `StreamProxy` in front of it with a fake
`StreamRuntime` (`ServerRuntime`) that hands out the server's URLs, a
stand-in for the API server's pods/exec (fake_rest.UpgradeFront) in front of
the proxy, and the fake API client whose Node points at the proxy."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from agent.stream_proxy import StreamProxy
from controlplane.client.config import ClientConfig
from proto.runtime.v1 import api_pb2 as cri
from runtime.streaming import StreamingConfig, StreamingServer
from tests.fakes.fake_rest import UpgradeFront
from tests.fakes.skiffctl import Ctl, node
from tests.fakes.streaming_backend import HostProcessBackend

TOKEN = "admin-secret"
CID = "c1"


@dataclass
class ServerRuntime:
    """A StreamRuntime whose pods have one running container (`cid`) and sandbox sb1."""

    server: StreamingServer
    calls: list[Any] = field(default_factory=list)
    cid: str = CID

    def list_containers(self, labels: dict[str, str]) -> list[cri.Container]:
        self.calls.append(labels)
        return [cri.Container(id=self.cid, state=cri.CONTAINER_RUNNING)]

    def list_pod_sandboxes(self, labels: dict[str, str]) -> list[cri.PodSandbox]:
        return [cri.PodSandbox(id="sb1")]

    def exec(self, request: cri.ExecRequest) -> str:
        self.calls.append(request)
        return self.server.get_exec(request)

    def attach(self, request: cri.AttachRequest) -> str:
        self.calls.append(request)
        return self.server.get_attach(request)

    def port_forward(self, request: cri.PortForwardRequest) -> str:
        self.calls.append(request)
        return self.server.get_port_forward(request)


@dataclass
class Stack:
    ctl: Ctl
    backend: HostProcessBackend
    server: StreamingServer
    runtime: ServerRuntime
    proxy: StreamProxy


@contextmanager
def stream_stack() -> Iterator[Stack]:
    backend = HostProcessBackend(env={"PATH": "/usr/bin:/bin", "LANG": "C"})
    backend.add_container(CID)
    config = StreamingConfig(port=0, stream_creation_timeout=5.0, drain_timeout=1.0, linger=2.0)
    ctl = Ctl()
    try:
        with StreamingServer(backend, config) as server:
            runtime = ServerRuntime(server)

            def lookup(ns: str, name: str) -> Any:
                try:
                    return ctl.client.get("Pod", name, ns)
                except Exception:
                    return None

            with StreamProxy(lookup, runtime, None) as proxy:
                front = UpgradeFront(proxy.port, TOKEN)
                try:
                    ctl.client.config = ClientConfig(f"127.0.0.1:{front.port}", token=TOKEN)  # type: ignore[attr-defined]
                    node(ctl, "n1", proxy.port)
                    make_pod(ctl, "web")
                    yield Stack(ctl, backend, server, runtime, proxy)
                finally:
                    front.stop()
    finally:
        backend.close()


def make_pod(ctl: Ctl, name: str, phase: str = "Running", **container: Any) -> None:
    ctl.client.create(
        "Pod",
        {
            "metadata": {"name": name},
            "spec": {
                "nodeName": "n1",
                "containers": [{"name": "app", "image": "busybox", **container}],
            },
            "status": {"phase": phase},
        },
        "default",
    )
