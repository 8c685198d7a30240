"""Encryption at rest, as kube-apiserver's EncryptionConfiguration has it.

`--encryption-provider-config FILE` names an EncryptionConfiguration
(apiserver.config.k8s.io/v1, YAML or JSON):

    resources:
    - resources: [secrets]
      providers:
      - aescbc:    {keys: [{name: key2, secret: <base64 of 32 bytes>}, {name: key1, ...}]}
      - secretbox: {keys: [{name: key0, secret: <base64 of 32 bytes>}]}
      - identity: {}

For the resources named (built-in kinds by plural: secrets, configmaps, ...)
the first provider's first key encrypts what is written; every provider and
key is tried, by the name the stored value carries, to read. Stored values
are Kubernetes' own: `k8s:enc:aescbc:v1:<key name>:<16-byte IV><AES-CBC,
PKCS#7>` and `k8s:enc:secretbox:v1:<key name>:<24-byte nonce><XSalsa20-
Poly1305>`, so keys rotate as in Kubernetes: add the new key second, restart;
move it first, restart; rewrite every Secret (`kubectl get secrets -A -o
json | kubectl replace -f -`); drop the old key. `identity` first writes
plaintext (to decrypt everything back). A value stored before encryption
was on (plain JSON) is read as it is.

`skiff controlplane --secrets-encryption` (k3s' flag) makes
`<data-dir>/encryption-config.json` (0600) with a random aescbc key the
first time, and uses it. A file that does not parse, names no known
resource or has a bad key stops the control plane at start, naming the
field. This module only transforms bytes; encrypted.py wraps the Store.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from machinery.atomicfile import write_private

MAGIC = b"k8s:enc:"
API_VERSION = "apiserver.config.k8s.io/v1"


class EncryptionError(ValueError):
    """A configuration that cannot be used, or a value that cannot be read; names the field."""


@dataclass(frozen=True)
class Key:
    name: str
    secret: bytes


class Provider:
    """One provider: its name in stored values and its keys."""

    name = ""

    def __init__(self, keys: Sequence[Key]) -> None:
        self.keys = {k.name: k for k in keys}
        self.first = keys[0] if keys else None

    def encrypt(self, data: bytes) -> bytes:
        assert self.first is not None
        return b"%s%s:v1:%s:" % (MAGIC, self.name.encode(), self.first.name.encode()) + \
            self.seal(self.first.secret, data)  # fmt: skip

    def seal(self, key: bytes, data: bytes) -> bytes:
        raise NotImplementedError

    def open(self, key: bytes, data: bytes) -> bytes:
        raise NotImplementedError


class AESCBC(Provider):
    name = "aescbc"

    def seal(self, key: bytes, data: bytes) -> bytes:
        # loaded with the first aescbc value (no encryption configured: never)
        from cryptography.hazmat.primitives import padding
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        iv = os.urandom(16)
        padder = padding.PKCS7(128).padder()
        padded = padder.update(data) + padder.finalize()
        encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
        return iv + encryptor.update(padded) + encryptor.finalize()

    def open(self, key: bytes, data: bytes) -> bytes:
        if len(data) < 32 or len(data) % 16:
            raise EncryptionError("aescbc: the stored value has not the size of IV and blocks")
        from cryptography.hazmat.primitives import padding
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        decryptor = Cipher(algorithms.AES(key), modes.CBC(data[:16])).decryptor()
        padded = decryptor.update(data[16:]) + decryptor.finalize()
        unpadder = padding.PKCS7(128).unpadder()
        try:
            return unpadder.update(padded) + unpadder.finalize()
        except ValueError:
            raise EncryptionError("aescbc: the value does not decrypt with its key") from None


class SecretBox(Provider):
    name = "secretbox"

    def seal(self, key: bytes, data: bytes) -> bytes:
        from nacl.secret import SecretBox as Box  # PyNaCl: XSalsa20-Poly1305, as Kubernetes'

        return bytes(Box(key).encrypt(data))

    def open(self, key: bytes, data: bytes) -> bytes:
        from nacl.exceptions import CryptoError
        from nacl.secret import SecretBox as Box

        try:
            return bytes(Box(key).decrypt(data))
        except CryptoError:
            raise EncryptionError("secretbox: the value does not decrypt with its key") from None


class Identity(Provider):
    name = "identity"

    def encrypt(self, data: bytes) -> bytes:
        return data


KEY_SIZES: Mapping[str, tuple[int, ...]] = {"aescbc": (16, 24, 32), "secretbox": (32,)}
PROVIDERS: Mapping[str, Callable[[Sequence[Key]], Provider]] = {
    "aescbc": AESCBC, "secretbox": SecretBox,
}  # fmt: skip


@dataclass(frozen=True)
class Transformer:
    """The providers of some resources: the first writes, any reads."""

    providers: tuple[Provider, ...]

    def encrypt(self, data: bytes) -> bytes:
        return self.providers[0].encrypt(data)

    def decrypt(self, data: bytes) -> bytes:
        return decrypt(self.providers, data)


def decrypt(providers: Sequence[Provider], data: bytes) -> bytes:
    """The plaintext of a stored value (a plain one as it is)."""
    if not data.startswith(MAGIC):
        return data
    try:
        name, version, key_name, sealed = data[len(MAGIC) :].split(b":", 3)
    except ValueError:
        raise EncryptionError("a stored value has a malformed k8s:enc: prefix") from None
    for provider in providers:
        if provider.name.encode() == name and version == b"v1":
            key = provider.keys.get(key_name.decode(errors="replace"))
            if key is not None:
                return provider.open(key.secret, sealed)
    raise EncryptionError(
        f"no {name.decode(errors='replace')} key named {key_name.decode(errors='replace')!r} "
        "in the encryption configuration reads this value"
    )


def _keys(kind: str, spec: Any, where: str) -> list[Key]:
    keys = (spec or {}).get("keys") if isinstance(spec, Mapping) else None
    if not isinstance(keys, list) or not keys:
        raise EncryptionError(f"{where}.keys: at least one key is required")
    out = []
    for i, entry in enumerate(keys):
        at = f"{where}.keys[{i}]"
        if not isinstance(entry, Mapping) or not entry.get("name") or ":" in str(entry["name"]):
            raise EncryptionError(f"{at}.name: required, without ':'")
        try:
            secret = base64.b64decode(str(entry.get("secret") or ""), validate=True)
        except (binascii.Error, ValueError):
            raise EncryptionError(f"{at}.secret: not base64") from None
        if len(secret) not in KEY_SIZES[kind]:
            raise EncryptionError(f"{at}.secret: a {kind} key is "
                                  f"{' or '.join(map(str, KEY_SIZES[kind]))} bytes, not {len(secret)}")  # fmt: skip
        out.append(Key(str(entry["name"]), secret))
    return out


def parse(
    doc: Any, source: str, resource_prefix: Callable[[str], str | None]
) -> dict[str, Transformer]:
    """Key prefix -> Transformer from an EncryptionConfiguration document;
    `resource_prefix(plural)` is the storage prefix of a resource (None: unknown)."""
    if not isinstance(doc, Mapping) or doc.get("kind") != "EncryptionConfiguration":
        raise EncryptionError(f"{source}: expected kind EncryptionConfiguration")
    if doc.get("apiVersion") != API_VERSION:
        raise EncryptionError(f"{source}: apiVersion must be {API_VERSION}")
    out: dict[str, Transformer] = {}
    for i, entry in enumerate(doc.get("resources") or []):
        where = f"{source}: resources[{i}]"
        names = entry.get("resources") if isinstance(entry, Mapping) else None
        listed = entry.get("providers") if isinstance(entry, Mapping) else None
        if not isinstance(names, list) or not names:
            raise EncryptionError(f"{where}.resources: required")
        if not isinstance(listed, list) or not listed:
            raise EncryptionError(f"{where}.providers: required")
        providers: list[Provider] = []
        for j, item in enumerate(listed):
            at = f"{where}.providers[{j}]"
            if not isinstance(item, Mapping) or len(item) != 1:
                raise EncryptionError(f"{at}: exactly one of aescbc, secretbox, identity")
            ((kind, spec),) = item.items()
            if kind == "identity":
                providers.append(Identity([]))
            elif kind in PROVIDERS:
                providers.append(PROVIDERS[kind](_keys(kind, spec, f"{at}.{kind}")))
            else:
                raise EncryptionError(f"{at}: unsupported provider {kind!r} (aescbc, secretbox, "
                                      "identity)")  # fmt: skip
        for name in names:
            prefix = resource_prefix(str(name).rstrip("."))  # "secrets." is the core group
            if prefix is None:
                raise EncryptionError(f"{where}.resources: unknown resource {name!r}")
            out.setdefault(prefix, Transformer(tuple(providers)))
    return out


def load(path: Path, resource_prefix: Callable[[str], str | None]) -> dict[str, Transformer]:
    try:
        text = path.read_text()
        doc = json.loads(text) if text.lstrip().startswith("{") else yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError) as err:
        raise EncryptionError(f"{path}: {err}") from None
    return parse(doc, str(path), resource_prefix)


def ensure_config(data_dir: Path) -> Path:
    """`<data-dir>/encryption-config.json` for --secrets-encryption: made once
    (0600) with a random aescbc key and identity (to read what was stored before)."""
    path = data_dir / "encryption-config.json"
    if not path.exists():
        key = base64.b64encode(secrets.token_bytes(32)).decode()
        doc = {"kind": "EncryptionConfiguration", "apiVersion": API_VERSION,
               "resources": [{"resources": ["secrets"],
                              "providers": [{"aescbc": {"keys": [{"name": "aescbckey",
                                                                  "secret": key}]}},
                                            {"identity": {}}]}]}  # fmt: skip
        write_private(path, (json.dumps(doc, indent=2) + "\n").encode())
    return path
