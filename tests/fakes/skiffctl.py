"""skiffctl run in-process against the fake API client (`Ctl`), and the
objects its tests put there: a Node pointing at an agent endpoint, a Pod."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from controlplane.cli.main import main
from controlplane.client.config import ClientConfig
from machinery.clock import FakeClock
from tests.fakes.fake_apiclient import FakeApiClient

TOKEN = "s3cret-admin-token"  # the admin token the fake client carries after with_token


@dataclass
class Result:
    code: int
    out: str
    err: str


class Ctl:
    """Runs `skiffctl` in-process against the fake client."""

    def __init__(self) -> None:
        self.clock = FakeClock(start=1_700_000_000.0)
        self.client = FakeApiClient(clock=self.clock)
        self.factory_calls = 0

    def factory(self, args: object) -> FakeApiClient:
        self.factory_calls += 1
        return self.client

    def __call__(self, *argv: str, stdin: str = "") -> Result:
        out, err = io.StringIO(), io.StringIO()
        code = main(
            list(argv),
            client_factory=self.factory,
            stdout=out,
            stderr=err,
            stdin=io.StringIO(stdin),
            clock=self.clock,
        )
        return Result(code, out.getvalue(), err.getvalue())


def node(ctl: Ctl, name: str, port: int, address: str = "127.0.0.1", **allocatable: str) -> None:
    ctl.client.create(
        "Node",
        {
            "metadata": {"name": name},
            "status": {
                "addresses": [
                    {"type": "Hostname", "address": name},
                    {"type": "InternalIP", "address": address},
                ],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
                "allocatable": allocatable or {"cpu": "2", "memory": "4Gi"},
            },
        },
    )


def pod(
    ctl: Ctl,
    name: str,
    node_name: str = "n1",
    containers: tuple[str, ...] = ("app",),
    ns: str = "default",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    phase: str = "Running",
) -> None:
    spec: dict[str, Any] = {"containers": [{"name": c, "image": "busybox"} for c in containers]}
    if node_name:
        spec["nodeName"] = node_name
    ctl.client.create(
        "Pod",
        {
            "metadata": {
                "name": name,
                "labels": labels or {},
                "annotations": annotations or {},
            },
            "spec": spec,
            "status": {"phase": phase},
        },
        ns,
    )


def with_token(ctl: Ctl, token: str = TOKEN) -> None:
    """The fake client carries a token, as the real GrpcApiClient does."""
    server = ctl.client.config.server  # type: ignore[attr-defined]
    ctl.client.config = ClientConfig(server=server, token=token)  # type: ignore[attr-defined]
