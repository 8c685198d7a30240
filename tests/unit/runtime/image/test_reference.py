"""Reference parsing and normalisation, as Docker does it."""

from __future__ import annotations

import pytest

from runtime.errors import InvalidArgument
from runtime.image import reference

DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("ref", "want"),
    [
        ("busybox", "docker.io/library/busybox:latest"),
        ("busybox:1.36", "docker.io/library/busybox:1.36"),
        ("library/busybox", "docker.io/library/busybox:latest"),
        ("index.docker.io/library/busybox", "docker.io/library/busybox:latest"),
        ("docker.io/busybox", "docker.io/library/busybox:latest"),
        ("user/app:v1", "docker.io/user/app:v1"),
        (
            "registry.k8s.io/e2e-test-images/busybox:1.29-2",
            "registry.k8s.io/e2e-test-images/busybox:1.29-2",
        ),
        ("localhost/app", "localhost/app:latest"),
        ("127.0.0.1:5000/a/b/c:t", "127.0.0.1:5000/a/b/c:t"),
        ("localhost:5000/app", "localhost:5000/app:latest"),
        (f"busybox@{DIGEST}", f"docker.io/library/busybox@{DIGEST}"),
        (f"busybox:1.0@{DIGEST}", f"docker.io/library/busybox:1.0@{DIGEST}"),
        ("a__b/c-d.e_f:tag_1.2-x", "docker.io/a__b/c-d.e_f:tag_1.2-x"),
    ],
)
def test_normalises(ref: str, want: str) -> None:
    assert str(reference.parse(ref)) == want


def test_parts() -> None:
    r = reference.parse(f"127.0.0.1:5000/team/app:v2@{DIGEST}")
    assert (r.domain, r.path, r.tag, r.digest) == ("127.0.0.1:5000", "team/app", "v2", DIGEST)
    assert r.name == "127.0.0.1:5000/team/app"
    assert r.with_digest(DIGEST) == f"127.0.0.1:5000/team/app@{DIGEST}"
    assert reference.parse("busybox").tagged() == "docker.io/library/busybox:latest"


@pytest.mark.parametrize(
    "ref",
    [
        "",
        "Busybox",
        "busybox:",
        "busybox:-bad",
        "bad//path",
        "/abs",
        "a/",
        "busybox@sha256:abc",
        "busybox@md5:" + "a" * 32,
        "a" * 64,
        " busybox",
        "busy box",
        "host:notaport/x",
        "x" * 300,
    ],
)
def test_refuses(ref: str) -> None:
    with pytest.raises(InvalidArgument) as exc:
        reference.parse(ref)
    assert ref in str(exc.value) or not ref


def test_ids() -> None:
    assert reference.is_hex_id("a" * 64)
    assert reference.is_sha256_digest(DIGEST)
    assert not reference.is_sha256_digest("sha256:xyz")
