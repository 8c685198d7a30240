"""registries.yaml: endpoints, mirrors, rewrites, disable_default_endpoint."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from runtime.errors import InvalidArgument
from runtime.image import config


def urls(cfg: config.RegistryConfig, domain: str, repo: str) -> list[str]:
    return [e.url for e in cfg.endpoints(domain, repo)]


def test_defaults_without_config() -> None:
    cfg = config.load(None)
    assert urls(cfg, "docker.io", "library/busybox") == [
        "https://registry-1.docker.io/v2/library/busybox"
    ]
    assert urls(cfg, "quay.io", "a/b") == ["https://quay.io/v2/a/b"]
    # Loopback registries are plain HTTP, as Docker allows.
    assert urls(cfg, "127.0.0.1:5000", "a") == ["http://127.0.0.1:5000/v2/a"]
    assert urls(cfg, "localhost:5000", "a") == ["http://localhost:5000/v2/a"]


def test_missing_file_is_empty(tmp_path: Path) -> None:
    cfg = config.load(tmp_path / "nope.yaml")
    assert cfg.mirrors == {} and not cfg.disable_default_endpoint


def test_mirror_keeps_repository_path(tmp_path: Path) -> None:
    path = tmp_path / "registries.yaml"
    path.write_text(
        "mirrors:\n"
        "  registry.k8s.io:\n"
        "    endpoint: [http://127.0.0.1:5000, https://mirror.example/prefix]\n"
    )
    cfg = config.load(path)
    assert urls(cfg, "registry.k8s.io", "e2e-test-images/busybox") == [
        "http://127.0.0.1:5000/v2/e2e-test-images/busybox",
        "https://mirror.example/prefix/e2e-test-images/busybox",
        "https://registry.k8s.io/v2/e2e-test-images/busybox",
    ]
    eps = cfg.endpoints("registry.k8s.io", "x")
    assert [e.is_mirror for e in eps] == [True, True, False]


def test_disable_default_endpoint() -> None:
    data = {"mirrors": {"docker.io": {"endpoint": ["http://127.0.0.1:5000"]}}}
    assert urls(
        config.from_dict(data, disable_default_endpoint=True), "docker.io", "library/a"
    ) == ["http://127.0.0.1:5000/v2/library/a"]
    data["disable_default_endpoint"] = True  # type: ignore[assignment]
    cfg = config.from_dict(data)
    assert urls(cfg, "docker.io", "library/a") == ["http://127.0.0.1:5000/v2/library/a"]
    # A host without mirrors is still reached directly.
    assert urls(cfg, "quay.io", "a") == ["https://quay.io/v2/a"]


def test_wildcard_and_rewrite() -> None:
    cfg = config.from_dict(
        {
            "mirrors": {
                "*": {"endpoint": ["http://127.0.0.1:5000"]},
                "docker.io": {
                    "endpoint": ["http://127.0.0.1:5001"],
                    "rewrite": {"^library/(.*)": "mirrored/$1"},
                },
            },
            "disable_default_endpoint": True,
        }
    )
    assert urls(cfg, "gcr.io", "a/b") == ["http://127.0.0.1:5000/v2/a/b"]
    assert urls(cfg, "docker.io", "library/busybox") == [
        "http://127.0.0.1:5001/v2/mirrored/busybox"
    ]


def test_configs_tls_and_auth() -> None:
    cfg = config.from_dict(
        {
            "configs": {
                "reg.example:443": {
                    "tls": {"ca_file": "/ca.pem", "insecure_skip_verify": True},
                    "auth": {"auth": base64.b64encode(b"u:p:w").decode()},
                }
            }
        }
    )
    (ep,) = cfg.endpoints("reg.example:443", "r")
    assert ep.tls == config.TLSConfig(ca_file="/ca.pem", insecure_skip_verify=True)
    assert (ep.auth.username, ep.auth.password) == ("u", "p:w")
    # A loopback host with TLS config is spoken to over HTTPS.
    cfg = config.from_dict({"configs": {"127.0.0.1:5443": {"tls": {"ca_file": "/ca.pem"}}}})
    assert urls(cfg, "127.0.0.1:5443", "r") == ["https://127.0.0.1:5443/v2/r"]


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.1.2.3:80", "localhost", "localhost:5000", "[::1]:5000", "::1"]
)
def test_loopback(host: str) -> None:
    assert config.is_loopback(host)


@pytest.mark.parametrize("host", ["10.0.0.1", "example.com", "registry.k8s.io:443"])
def test_not_loopback(host: str) -> None:
    assert not config.is_loopback(host)


def test_bad_yaml(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("mirrors: [\n")
    with pytest.raises(InvalidArgument):
        config.load(path)
    with pytest.raises(InvalidArgument):
        config.from_dict({"mirrors": {"x": {"endpoint": ["ftp://x"]}}}).endpoints("x", "r")
