"""Pure helpers: chain IDs, platform selection, users, single flight, auth."""

from __future__ import annotations

import hashlib
import threading

import pytest

from proto.runtime.v1 import api_pb2
from runtime.cri.image_pull import credentials
from runtime.cri.image_status import user_of
from runtime.image import mediatypes
from runtime.image.layers import chain_ids
from runtime.image.pull import SingleFlight
from runtime.image.registry import _error_message, _parse_challenge
from tests.harness.wait import wait_for


def test_chain_ids() -> None:
    a, b, c = ("sha256:" + ch * 64 for ch in "abc")
    ab = "sha256:" + hashlib.sha256(f"{a} {b}".encode()).hexdigest()
    abc = "sha256:" + hashlib.sha256(f"{ab} {c}".encode()).hexdigest()
    assert chain_ids([a, b, c]) == [a, ab, abc]
    assert chain_ids([]) == []


def _desc(arch: str, variant: str = "", os_: str = "linux") -> dict[str, object]:
    plat = {"os": os_, "architecture": arch}
    if variant:
        plat["variant"] = variant
    return {"mediaType": mediatypes.OCI_MANIFEST, "digest": f"{arch}{variant}", "platform": plat}


def test_select_platform() -> None:
    index = {
        "manifests": [
            _desc("unknown", os_="unknown"),
            _desc("arm64", "v8"),
            _desc("amd64"),
            _desc("arm", "v7"),
        ]
    }
    assert mediatypes.select_platform(index, ("linux", "amd64", ""))["digest"] == "amd64"  # type: ignore[index]
    assert mediatypes.select_platform(index, ("linux", "arm64", "v8"))["digest"] == "arm64v8"  # type: ignore[index]
    assert mediatypes.select_platform(index, ("linux", "s390x", "")) is None
    assert mediatypes.host_platform()[0] == "linux"


@pytest.mark.parametrize(
    ("user", "uid", "name"),
    [
        ("", None, ""),
        ("1002", 1002, ""),
        ("www-data", None, "www-data"),
        ("1003:1004", 1003, ""),
        ("www-data:1004", None, "www-data"),
    ],
)
def test_user_of(user: str, uid: int | None, name: str) -> None:
    assert user_of({"config": {"User": user}}) == (uid, name)


def test_user_of_without_config() -> None:
    assert user_of({}) == (None, "")


def test_single_flight_shares_one_call() -> None:
    flight: SingleFlight[int] = SingleFlight()
    release = threading.Event()
    calls = []
    results: list[int] = []

    def work() -> int:
        calls.append(1)
        release.wait(10)
        return 42

    threads = [
        threading.Thread(target=lambda: results.append(flight.do("k", work))) for _ in range(5)
    ]
    for t in threads:
        t.start()
    wait_for(lambda: calls, message="the leader to start")
    release.set()
    for t in threads:
        t.join(10)
    assert results == [42] * 5 and len(calls) == 1


def test_single_flight_shares_errors() -> None:
    flight: SingleFlight[int] = SingleFlight()

    def boom() -> int:
        raise ValueError("x")

    with pytest.raises(ValueError):
        flight.do("k", boom)
    assert flight.do("k", lambda: 1) == 1


def test_challenge_and_errors() -> None:
    scheme, params = _parse_challenge(
        'Bearer realm="http://127.0.0.1:1/token",service="reg",scope="repository:a/b:pull"'
    )
    assert scheme == "bearer"
    assert params == {
        "realm": "http://127.0.0.1:1/token",
        "service": "reg",
        "scope": "repository:a/b:pull",
    }
    body = b'{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}'
    assert _error_message(body, "x") == "MANIFEST_UNKNOWN: manifest unknown"
    assert _error_message(b"", "HTTP 404") == "HTTP 404"


def test_cri_credentials() -> None:
    import base64

    auth = api_pb2.AuthConfig(auth=base64.b64encode(b"me:secret").decode())
    c = credentials(auth)
    assert (c.username, c.password) == ("me", "secret")
    c = credentials(api_pb2.AuthConfig(username="u", password="p", registry_token="t"))
    assert (c.username, c.password, c.registry_token) == ("u", "p", "t")
