"""/livez, /readyz, /healthz as kube-apiserver prints them; the served version
decided from what skiff serves; gzip of large answers."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane.apiserver.rest import discovery, version
from tests.unit.controlplane.apiserver.rest.wire_harness import Api, serve


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with serve(tmp_path) as api:
        yield api


def test_health_endpoints_name_their_checks(api: Api) -> None:
    assert api.call("GET", "/livez").body == b"ok"
    assert api.call("GET", "/livez?verbose").body.decode() == (
        "[+]ping ok\n[+]etcd ok\nlivez check passed\n"
    )
    assert api.call("GET", "/readyz?verbose").body.decode() == (
        "[+]ping ok\n[+]etcd ok\n[+]informer-sync ok\nreadyz check passed\n"
    )
    assert api.call("GET", "/healthz?verbose").body.decode().endswith("healthz check passed\n")
    excluded = api.call("GET", "/readyz?verbose&exclude=etcd&exclude=nosuch").body.decode()
    assert excluded == (
        "[+]ping ok\n[+]etcd excluded: ok\n[+]informer-sync ok\n"
        'warn: some health checks cannot be excluded: no matches for "nosuch"\n'
        "readyz check passed\n"
    )
    assert api.call("GET", "/livez/etcd").body == b"ok"
    assert api.call("GET", "/livez/nosuch").status == 404


def test_a_failing_check_is_a_500_listing_every_check(api: Api) -> None:
    def broken() -> int:
        raise OSError("disk gone")

    api.registry.store.current_revision = broken  # type: ignore[method-assign]
    answer = api.call("GET", "/livez")
    assert answer.status == 500
    assert answer.body.decode() == (
        "[+]ping ok\n[-]etcd failed: reason withheld\nlivez check failed\n"
    )
    assert api.call("GET", "/livez?exclude=etcd").body == b"ok"


def test_the_version_is_the_newest_minor_whose_surface_skiff_serves(api: Api) -> None:
    served = api.call("GET", "/version").json()
    minor = version.served_minor()
    assert served["gitVersion"] == f"v1.{minor}.0+skiff" and served["minor"] == str(minor)
    lacking = version.missing()
    assert all(m > minor for m, _ in lacking)  # nothing of this minor or older is missing
    assert all(m != minor + 1 for m, _, check in version.FEATURES if check()) or lacking
    # Today: everything through 1.32; 1.33's pods/resize is not served yet.
    assert minor == 32
    assert [m for m, _ in lacking] == [33]


def test_the_version_follows_what_is_served(monkeypatch: pytest.MonkeyPatch) -> None:
    real = discovery.resource_list

    def with_resize(group_version: str) -> object:
        found = real(group_version)
        if group_version == "v1" and found is not None:
            found = {**found, "resources": [*found["resources"], {"name": "pods/resize"}]}
        return found

    version.served_minor.cache_clear()
    monkeypatch.setattr(discovery, "resource_list", with_resize)
    try:
        assert version.served_minor() == 33
        monkeypatch.setattr(discovery, "AGGREGATED_VERSIONS", ("v2beta1",))
        version.served_minor.cache_clear()
        assert version.served_minor() == 29
    finally:
        version.served_minor.cache_clear()


def test_large_answers_are_gzipped_when_accepted(api: Api) -> None:
    cms = "/api/v1/namespaces/default/configmaps"
    for i in range(8):
        doc = {"metadata": {"name": f"c{i}"}, "data": {"v": "x" * 20_000 + str(i)}}
        assert api.call("POST", cms, doc).status == 201
    plain = api.call("GET", f"{cms}?limit=100", headers={"Accept-Encoding": "identity"})
    assert "Content-Encoding" not in plain.headers
    zipped = api.call("GET", f"{cms}?limit=100", headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in zipped.headers["Vary"]
    assert json.loads(gzip.decompress(zipped.body)) == plain.json()
    streamed = api.call("GET", cms, headers={"Accept-Encoding": "gzip, deflate"})
    assert streamed.headers.get("Content-Encoding") == "gzip"
    assert json.loads(gzip.decompress(streamed.body))["items"] == plain.json()["items"]
    small = api.call("GET", f"{cms}/c1", headers={"Accept-Encoding": "gzip"})
    assert "Content-Encoding" not in small.headers  # under kube-apiserver's 128 KiB
    refused = api.call("GET", f"{cms}?limit=100", headers={"Accept-Encoding": "gzip;q=0"})
    assert "Content-Encoding" not in refused.headers
