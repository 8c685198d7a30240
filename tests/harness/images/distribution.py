"""A small OCI distribution (registry v2 API) client over plain HTTP.

Enough to push test images and read them back: HEAD to skip blobs the
repository has, POST + PUT `?digest=` (monolithic upload), PUT manifests by
tag or digest with their media type, GET manifests and blobs with digest
checks, list tags and delete manifests. It speaks only to the registry it is
given (tests use 127.0.0.1); no auth, no TLS, no redirects to other hosts.
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from tests.harness.images.content import ACCEPT_ALL, INDEX_TYPES, Blob, sha256_digest
from tests.harness.images.manifest import Image, Index, Platform


class RegistryError(Exception):
    """The registry answered with an unexpected status."""

    def __init__(self, method: str, path: str, status: int, body: bytes) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body[:500]!r}")
        self.status = status
        self.body = body


@dataclass(frozen=True)
class Response:
    status: int
    headers: Mapping[str, str]  # lower-case names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class ImageRef:
    """An image or index as pushed: where it is and what it is made of."""

    host: str
    repository: str
    tag: str
    manifest_digest: str
    media_type: str
    config_digest: str = ""  # empty for an index
    layer_digests: tuple[str, ...] = ()
    children: tuple[ImageRef, ...] = field(default=())  # an index's platform images

    @property
    def name(self) -> str:
        """`127.0.0.1:PORT/repo`, the image name without tag or digest."""
        return f"{self.host}/{self.repository}"

    @property
    def reference(self) -> str:
        """`127.0.0.1:PORT/repo:tag`, what a CRI PullImage asks for."""
        return f"{self.name}:{self.tag}"

    @property
    def digest_reference(self) -> str:
        """`127.0.0.1:PORT/repo@sha256:...`."""
        return f"{self.name}@{self.manifest_digest}"

    @property
    def digest(self) -> str:
        return self.manifest_digest


class RegistryClient:
    """One HTTP connection per request, to `host` ("127.0.0.1:PORT")."""

    def __init__(self, host: str, timeout: float = 60.0) -> None:
        self.host = host
        self.timeout = timeout

    def request(
        self,
        method: str,
        path: str,
        body: bytes | BinaryIO | None = None,
        headers: Mapping[str, str] | None = None,
        expect: tuple[int, ...] = (200,),
    ) -> Response:
        conn = http.client.HTTPConnection(self.host, timeout=self.timeout)
        try:
            conn.request(method, path, body=body, headers=dict(headers or {}))
            resp = conn.getresponse()
            data = resp.read()
            out = Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
        finally:
            conn.close()
        if out.status not in expect:
            raise RegistryError(method, path, out.status, out.body)
        return out

    def ping(self) -> bool:
        return self.request("GET", "/v2/", expect=(200, 401, 404)).status == 200

    # ---------------------------------------------------------------- blobs

    def has_blob(self, repo: str, digest: str) -> bool:
        return self.request("HEAD", f"/v2/{repo}/blobs/{digest}", expect=(200, 404)).status == 200

    def push_blob(self, repo: str, blob: Blob) -> bool:
        """Upload `blob` unless the repository has it; True if uploaded."""
        if self.has_blob(repo, blob.digest):
            return False
        started = self.request(
            "POST", f"/v2/{repo}/blobs/uploads/", headers={"Content-Length": "0"}, expect=(202,)
        )
        location = urllib.parse.urlsplit(started.headers["location"])
        if location.netloc and location.netloc != self.host:
            raise RegistryError(
                "POST", location.geturl(), 202, b"upload redirected to another host"
            )
        query = location.query + ("&" if location.query else "")
        query += urllib.parse.urlencode({"digest": blob.digest})
        with blob.open() as f:
            self.request(
                "PUT",
                f"{location.path}?{query}",
                body=f,
                headers={
                    "Content-Type": "application/octet-stream",
                    "Content-Length": str(blob.size),
                },
                expect=(201,),
            )
        return True

    def get_blob(self, repo: str, digest: str, verify: bool = True) -> bytes:
        body = self.request("GET", f"/v2/{repo}/blobs/{digest}").body
        if verify and sha256_digest(body) != digest:
            raise ValueError(f"blob {digest} of {repo}: body hashes to {sha256_digest(body)}")
        return body

    # ------------------------------------------------------------ manifests

    def put_manifest(self, repo: str, reference: str, blob: Blob) -> str:
        """PUT a manifest by tag or digest; returns the registry's digest."""
        resp = self.request(
            "PUT",
            f"/v2/{repo}/manifests/{reference}",
            body=blob.read_bytes(),
            headers={"Content-Type": blob.media_type},
            expect=(201,),
        )
        digest = resp.headers.get("docker-content-digest", "")
        if digest != blob.digest:
            raise ValueError(f"registry stored {repo}:{reference} as {digest}, not {blob.digest}")
        return digest

    def get_manifest(
        self, repo: str, reference: str, accept: str = ACCEPT_ALL, verify: bool = True
    ) -> Response:
        """GET a manifest; checks Docker-Content-Digest against the body's sha256."""
        resp = self.request("GET", f"/v2/{repo}/manifests/{reference}", headers={"Accept": accept})
        if verify:
            digest = sha256_digest(resp.body)
            if resp.headers.get("docker-content-digest") != digest:
                raise ValueError(f"{repo}:{reference}: header digest != body sha256 {digest}")
            if reference.startswith("sha256:") and reference != digest:
                raise ValueError(f"{repo}@{reference}: body hashes to {digest}")
        return resp

    def resolve(
        self, repo: str, reference: str, platform: Platform | str = "linux/amd64"
    ) -> Response:
        """GET `reference`; if it is an index, GET the `platform` child instead."""
        resp = self.get_manifest(repo, reference)
        if resp.headers.get("content-type", "").split(";")[0] not in INDEX_TYPES:
            return resp
        want = Platform.parse(platform) if isinstance(platform, str) else platform
        for m in resp.json()["manifests"]:
            p = m.get("platform", {})
            got = Platform(p.get("os", ""), p.get("architecture", ""), p.get("variant", ""))
            if got == want:
                return self.get_manifest(repo, m["digest"])
        raise KeyError(f"{repo}:{reference} has no {want} manifest")

    def tags(self, repo: str) -> list[str]:
        resp = self.request("GET", f"/v2/{repo}/tags/list", expect=(200, 404))
        return list(resp.json().get("tags") or []) if resp.status == 200 else []

    def delete_manifest(self, repo: str, digest: str) -> None:
        self.request("DELETE", f"/v2/{repo}/manifests/{digest}", expect=(202, 404))

    def delete_repository(self, repo: str) -> None:
        """Delete every tagged manifest of `repo` (and an index's children).
        The v2 API cannot remove the repository itself or its blobs."""
        digests: list[str] = []
        for tag in self.tags(repo):
            resp = self.request(
                "GET",
                f"/v2/{repo}/manifests/{tag}",
                headers={"Accept": ACCEPT_ALL},
                expect=(200, 404),
            )
            if resp.status != 200:
                continue
            if resp.headers.get("content-type", "").split(";")[0] in INDEX_TYPES:
                digests += [m["digest"] for m in resp.json()["manifests"]]
            digests.append(resp.headers["docker-content-digest"])
        for digest in dict.fromkeys(digests):
            self.delete_manifest(repo, digest)

    # ---------------------------------------------------------------- push

    def push(self, repo: str, item: Image | Index, tag: str | None = None) -> ImageRef:
        """Push an image (blobs, then manifest by tag) or an index (each child
        by digest, then the index by tag). `tag` defaults to `item.tag`."""
        tag = tag or item.tag
        if isinstance(item, Image):
            self._push_image(repo, item, tag)
            return _image_ref(self.host, repo, tag, item)
        children = []
        for image in item.images:
            self._push_image(repo, image, image.digest)
            children.append(_image_ref(self.host, repo, tag, image))
        self.put_manifest(repo, tag, item.manifest)
        return ImageRef(
            self.host, repo, tag, item.digest, item.media_type, children=tuple(children)
        )

    def _push_image(self, repo: str, image: Image, reference: str) -> None:
        for blob in image.blobs():
            self.push_blob(repo, blob)
        self.put_manifest(repo, reference, image.manifest)


def _image_ref(host: str, repo: str, tag: str, image: Image) -> ImageRef:
    return ImageRef(
        host,
        repo,
        tag,
        image.digest,
        image.media_type,
        image.config_digest,
        tuple(image.layer_digests),
    )
