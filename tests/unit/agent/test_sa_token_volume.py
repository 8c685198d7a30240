"""The projected ServiceAccount token volume (issue 16): written with the
pod's token, CA and namespace, renewed before it expires, never blocking a
pod when no token can be had yet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.pod_config import NodeSettings
from agent.sa_tokens import TokenManager
from agent.volumes import VolumeSources, refresh_token_volumes, setup_volumes
from controlplane.api.serviceaccounts import access_volume
from controlplane.client.errors import NotFound


def pod() -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "team", "uid": "u1"},
            "spec": {"serviceAccountName": "builder", "volumes": [access_volume("kube-api-access")],
                     "containers": [{"name": "c", "image": "i"}]}}  # fmt: skip


class Api:
    """Answers TokenRequests with numbered tokens; can be told to fail."""

    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, Any], str]] = []
        self.fail = False

    def create(self, kind: str, obj: dict[str, Any], namespace: str) -> dict[str, Any]:
        assert kind == "TokenRequest"
        self.calls.append((obj, namespace))
        if self.fail:
            raise NotFound('serviceaccounts "builder" not found')
        return {"status": {"token": f"token-{len(self.calls)}"}}


def test_token_volume_is_written_and_renewed(tmp_path: Path) -> None:
    api, now = Api(), [1000.0]
    tokens = TokenManager(api, lambda: now[0])  # type: ignore[arg-type]
    ca = {"data": {"ca.crt": "CA PEM"}}
    src = VolumeSources(lambda ns, n: ca if n == "kube-root-ca.crt" else None,
                        lambda ns, n: None, NodeSettings(node_name="n1"), tokens=tokens.get)  # fmt: skip
    paths = setup_volumes(tmp_path, pod(), src)
    vol = Path(paths["kube-api-access"])
    assert (vol / "token").read_text() == "token-1"
    assert (vol / "ca.crt").read_text() == "CA PEM"
    assert (vol / "namespace").read_text() == "team"
    request, ns = api.calls[0]
    assert ns == "team" and request["metadata"]["name"] == "builder"
    assert request["spec"]["boundObjectRef"] == {"kind": "Pod", "apiVersion": "v1",
                                                 "name": "p", "uid": "u1"}  # fmt: skip
    assert refresh_token_volumes(tmp_path, pod(), src) == 0  # fresh: nothing to do
    now[0] += 0.81 * 3607  # past 80% of its life
    assert refresh_token_volumes(tmp_path, pod(), src) == 1
    assert (vol / "token").read_text() == "token-2"
    tokens.forget(set())
    api.fail = True
    assert refresh_token_volumes(tmp_path, pod(), src) == 1  # written without the token
    assert not (vol / "token").exists() and (vol / "namespace").read_text() == "team"


def test_no_token_yet_does_not_block_the_pod(tmp_path: Path) -> None:
    api = Api()
    api.fail = True
    src = VolumeSources(lambda ns, n: None, lambda ns, n: None, NodeSettings(node_name="n1"),
                        TokenManager(api, lambda: 0.0).get)  # type: ignore[arg-type]  # fmt: skip
    paths = setup_volumes(tmp_path, pod(), src)
    assert sorted(p.name for p in Path(paths["kube-api-access"]).iterdir()
                  if not p.name.startswith("..")) == ["namespace"]  # fmt: skip


def test_token_refresh_of_a_pod_with_a_claim(tmp_path: Path) -> None:
    """The renewal looks only at token volumes: a pod that also mounts a
    PersistentVolumeClaim has its token renewed (it failed with
    'persistentVolumeClaim not supported' on every resync)."""
    api, now = Api(), [1000.0]
    tokens = TokenManager(api, lambda: now[0])  # type: ignore[arg-type]
    src = VolumeSources(lambda ns, n: None, lambda ns, n: None, NodeSettings(node_name="n1"),
                        claims=lambda p, v: str(tmp_path / "claim"), tokens=tokens.get)  # fmt: skip
    with_claim = pod()
    with_claim["spec"]["volumes"].append(
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
    )
    setup_volumes(tmp_path, with_claim, src)
    now[0] += 0.81 * 3607
    src_without_claims = VolumeSources(
        src.configmaps, src.secrets, src.node, tokens=tokens.get
    )  # the resync's view: no claim lookup needed
    assert refresh_token_volumes(tmp_path, with_claim, src_without_claims) == 1
