"""Registry credential leaks (issue 17): credentials go only to their host
and only over TLS (loopback excepted), never after an https -> http
redirect; a token realm must be https; redirects to link-local or metadata
addresses are refused; errors carry no response body beyond a sanitized
v2 error. The HTTP layer is a recording fake (`_raw`)."""

from __future__ import annotations

import email.message
from typing import Any

import pytest

from runtime.errors import Unavailable
from runtime.image.config import Credentials, Endpoint, TLSConfig
from runtime.image.errors import Unauthorized
from runtime.image.registry import PullSettings, RepositoryClient


class FakeResponse:
    def __init__(self, status: int, headers: dict[str, str], body: bytes = b"") -> None:
        self.status = status
        self.headers = email.message.Message()
        for k, v in headers.items():
            self.headers[k] = v
        self.length = len(body)
        self._body = body

    def read(self, n: int = -1) -> bytes:
        out, self._body = (self._body, b"") if n < 0 else (self._body[:n], self._body[n:])
        return out

    def close(self) -> None:
        pass

    def __enter__(self) -> FakeResponse:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class Recording(RepositoryClient):
    def __init__(self, endpoint: Endpoint, creds: Credentials, answers: dict[str, Any]) -> None:
        super().__init__(endpoint, creds, PullSettings())
        self.answers = answers
        self.sent: list[tuple[str, str | None]] = []
        self.resolve = lambda host: {"storage.example": ["169.254.10.1"]}.get(host, ["192.0.2.1"])

    def _raw(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None = None
    ) -> Any:
        self.sent.append((url, headers.get("Authorization")))
        answer = self.answers[url]
        return answer() if callable(answer) else answer


def endpoint(scheme: str = "https", host: str = "reg.example") -> Endpoint:
    return Endpoint(scheme, host, "/v2", "app", TLSConfig(), Credentials(), False)


CREDS = Credentials(username="me", password="secret")
MANIFEST = "https://reg.example/v2/app/manifests/1"


def test_no_credentials_after_https_to_http_redirect() -> None:
    c = Recording(endpoint(), CREDS, {})
    c._auth_header = "Basic bWU6c2VjcmV0"
    # same host name, default ports: only the scheme changes
    c.answers = {
        MANIFEST: FakeResponse(307, {"Location": "http://reg.example/v2/app/manifests/1"}),
        "http://reg.example/v2/app/manifests/1": FakeResponse(200, {}, b"{}"),
    }
    c.get_manifest("1")
    assert c.sent == [
        (MANIFEST, "Basic bWU6c2VjcmV0"),
        ("http://reg.example/v2/app/manifests/1", None),
    ]


def test_basic_auth_never_over_plain_http_except_loopback() -> None:
    url = "http://reg.example/v2/app/manifests/1"
    c = Recording(endpoint("https"), CREDS, {})
    c.answers = {MANIFEST: FakeResponse(307, {"Location": url}), url: FakeResponse(200, {})}
    assert not c.may_send_credentials(url)
    assert c.may_send_credentials("http://127.0.0.1:5000/v2/")
    assert c.may_send_credentials("http://[::1]:5000/v2/")
    # an operator's plain-http registry gets its own credentials
    assert Recording(endpoint("http"), CREDS, {}).may_send_credentials(url)


@pytest.mark.parametrize(
    "realm", ["http://auth.example/token", "ftp://auth.example/token", "file:///etc/passwd"]
)
def test_token_realm_must_be_https(realm: str) -> None:
    c = Recording(endpoint(), CREDS, {})
    c.answers = {
        MANIFEST: FakeResponse(401, {"WWW-Authenticate": f'Bearer realm="{realm}",service="r"'})
    }
    with pytest.raises(Unauthorized, match="realm"):
        c.get_manifest("1")
    assert all(not url.startswith(realm) for url, _ in c.sent)  # nothing sent there


@pytest.mark.parametrize(
    "target",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fe80::1]/x",
        "http://metadata.google.internal/computeMetadata/v1/",
        "https://storage.example/blob",  # a name that resolves to a link-local address
    ],
)
def test_redirect_to_metadata_refused(target: str) -> None:
    c = Recording(endpoint(), Credentials(), {MANIFEST: FakeResponse(302, {"Location": target})})
    with pytest.raises(Unavailable, match="refused"):
        c.get_manifest("1")
    assert [url for url, _ in c.sent] == [MANIFEST]


def test_error_bodies_not_reflected() -> None:
    secret = b"AWS_SECRET_ACCESS_KEY=abc\n<html>internal admin</html>"
    c = Recording(endpoint(), Credentials(), {MANIFEST: FakeResponse(500, {}, secret)})
    with pytest.raises(Unavailable) as info:
        c.get_manifest("1")
    assert "AWS" not in str(info.value) and "internal" not in str(info.value)
    assert "HTTP 500" in str(info.value)
    v2 = b'{"errors":[{"code":"MANIFEST_UNKNOWN","message":"unknown\\n\\u001b[31m"}]}'
    c = Recording(endpoint(), Credentials(), {MANIFEST: FakeResponse(404, {}, v2)})
    with pytest.raises(Exception, match="MANIFEST_UNKNOWN: unknown") as info2:
        c.get_manifest("1")
    assert "\n" not in str(info2.value) and "\x1b" not in str(info2.value)
