"""Image references, parsed and normalised the way Docker does.

`busybox` becomes `docker.io/library/busybox:latest`; `host:5000/a/b@sha256:…`
keeps its registry and digest. Parsing is pure: this module never touches the
network or the disk, and it refuses anything the distribution grammar does not
allow (upper case, empty components, bad tags, malformed digests) with an
`InvalidArgument` that names the reference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from runtime.errors import InvalidArgument

DEFAULT_DOMAIN = "docker.io"
LEGACY_DEFAULT_DOMAIN = "index.docker.io"
OFFICIAL_REPO_PREFIX = "library/"
DEFAULT_TAG = "latest"

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_PATH_RE = re.compile(rf"^{_COMPONENT}(?:/{_COMPONENT})*$")
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN_RE = re.compile(
    rf"^(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:.]+\])(?::[0-9]+)?$"
)
_TAG_RE = re.compile(r"^[\w][\w.-]{0,127}$")
_DIGEST_RE = re.compile(r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$")
_SHA256_RE = re.compile(r"^sha256:[a-f0-9]{64}$")
_HEX64_RE = re.compile(r"^[a-f0-9]{64}$")
NAME_TOTAL_LENGTH_MAX = 255


@dataclass(frozen=True)
class Reference:
    """A normalised reference: always a domain; a tag, a digest, or both."""

    domain: str
    path: str
    tag: str | None = None
    digest: str | None = None

    @property
    def name(self) -> str:
        """`docker.io/library/busybox`: the repository with its registry."""
        return f"{self.domain}/{self.path}"

    def tagged(self) -> str:
        """`name:tag` (the RepoTags form); only for tagged references."""
        return f"{self.name}:{self.tag or DEFAULT_TAG}"

    def with_digest(self, digest: str) -> str:
        """`name@digest` (the RepoDigests form)."""
        return f"{self.name}@{digest}"

    def __str__(self) -> str:
        out = self.name
        if self.tag is not None:
            out += f":{self.tag}"
        if self.digest is not None:
            out += f"@{self.digest}"
        return out


def is_sha256_digest(value: str) -> bool:
    return bool(_SHA256_RE.match(value))


def is_hex_id(value: str) -> bool:
    """A bare 64-hex image id (Docker refuses these as repository names)."""
    return bool(_HEX64_RE.match(value))


def parse(ref: str) -> Reference:
    """Parse and normalise `ref`; a missing tag (and digest) becomes `latest`."""
    if not ref:
        raise InvalidArgument("image reference is empty")
    if ref != ref.strip():
        raise InvalidArgument(f"invalid image reference {ref!r}: surrounding whitespace")
    if is_hex_id(ref):
        raise InvalidArgument(
            f"invalid image reference {ref!r}: a 64-hex string is an image id, not a name"
        )
    remainder, digest = ref, None
    if "@" in ref:
        remainder, _, digest = ref.partition("@")
        if not _DIGEST_RE.match(digest):
            raise InvalidArgument(f"invalid image reference {ref!r}: bad digest {digest!r}")
        algo, _, hexpart = digest.partition(":")
        if algo == "sha256" and not _HEX64_RE.match(hexpart):
            raise InvalidArgument(f"invalid image reference {ref!r}: bad sha256 digest")
        if algo != "sha256":
            raise InvalidArgument(f"invalid image reference {ref!r}: unsupported digest {algo!r}")
    tag = None
    slash = remainder.rfind("/")
    colon = remainder.rfind(":")
    if colon > slash:
        remainder, tag = remainder[:colon], remainder[colon + 1 :]
        if not _TAG_RE.match(tag):
            raise InvalidArgument(f"invalid image reference {ref!r}: bad tag {tag!r}")
    if not remainder:
        raise InvalidArgument(f"invalid image reference {ref!r}: no repository name")
    domain, path = _split_domain(remainder)
    if domain and not _DOMAIN_RE.match(domain):
        raise InvalidArgument(f"invalid image reference {ref!r}: bad registry host {domain!r}")
    if not _PATH_RE.match(path):
        if path.lower() != path and _PATH_RE.match(path.lower()):
            raise InvalidArgument(
                f"invalid image reference {ref!r}: repository name must be lowercase"
            )
        raise InvalidArgument(f"invalid image reference {ref!r}: bad repository name {path!r}")
    if len(f"{domain}/{path}") > NAME_TOTAL_LENGTH_MAX:
        raise InvalidArgument(f"invalid image reference {ref!r}: name longer than 255 characters")
    if tag is None and digest is None:
        tag = DEFAULT_TAG
    return Reference(domain=domain, path=path, tag=tag, digest=digest)


def _split_domain(name: str) -> tuple[str, str]:
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        domain, path = first, rest
    else:
        domain, path = DEFAULT_DOMAIN, name
    if domain == LEGACY_DEFAULT_DOMAIN:
        domain = DEFAULT_DOMAIN
    if domain == DEFAULT_DOMAIN and "/" not in path:
        path = OFFICIAL_REPO_PREFIX + path
    return domain, path
