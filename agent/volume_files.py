"""The files of the API-backed volumes: configMap, secret, downwardAPI and
projected (those plus serviceAccountToken sources).

`volume_files` turns a volume of the pod into {relative path: (bytes,
mode)}, as the kubelet's volume plugins do before they hand the payload to
the atomic writer: a Secret's `data` and a ConfigMap's `binaryData` are
base64-decoded and kept as bytes (a keystore or a gzip file arrives byte
for byte), a ConfigMap's `data` and a Secret's `stringData` are UTF-8.
`items` pick and rename keys (a missing key is an error unless the source
is optional); a missing object is an error unless it is optional.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agent.pod_config import ConfigError, NodeSettings, field_ref

# (namespace, name) -> the object (ConfigMap or Secret) or None when missing.
ObjectLookup = Callable[[str, str], Mapping[str, Any] | None]
# (pod, volume) -> the host path of a persistentVolumeClaim volume (agent/claims.py);
# raises ConfigError while the claim cannot be used yet.
ClaimLookup = Callable[[Mapping[str, Any], Mapping[str, Any]], str]
# (pod, audience, expirationSeconds) -> a ServiceAccount token, or None for now.
TokenSource = Callable[[Mapping[str, Any], str, int], str | None]
# relative path -> (content, mode or None for the volume's defaultMode)
Files = dict[str, tuple[bytes, int | None]]

# The volume kinds whose files the agent writes (and keeps up to date).
FILE_KINDS = ("configMap", "secret", "downwardAPI", "projected")


@dataclass(frozen=True)
class VolumeSources:
    configmaps: ObjectLookup
    secrets: ObjectLookup
    node: NodeSettings
    claims: ClaimLookup | None = None
    tokens: TokenSource | None = None  # projected serviceAccountToken sources


def file_kind(volume: Mapping[str, Any]) -> str | None:
    return next((k for k in FILE_KINDS if k in volume), None)


def _key_items(
    data: Mapping[str, bytes], items: list[dict[str, Any]] | None, what: str, optional: bool
) -> Files:
    if not items:
        return {k: (v, None) for k, v in data.items()}
    out: Files = {}
    for item in items:
        if item["key"] not in data:
            if optional:
                continue
            raise ConfigError(f"{what}: key {item['key']!r} not found")
        out[item["path"]] = (data[item["key"]], item.get("mode"))
    return out


def _downward_files(
    pod: Mapping[str, Any], items: list[dict[str, Any]], node: NodeSettings
) -> Files:
    out: Files = {}
    md = pod["metadata"]
    for item in items:
        if "fieldRef" in item:
            path = item["fieldRef"]["fieldPath"]
            if path in ("metadata.labels", "metadata.annotations"):
                values = md.get(path.split(".")[1]) or {}
                text = "\n".join(f'{k}="{v}"' for k, v in sorted(values.items()))
            else:
                text = field_ref(pod, path, node)
        else:
            raise ConfigError(f"downwardAPI item {item.get('path')}: only fieldRef is supported")
        out[item["path"]] = (text.encode(), item.get("mode"))
    return out


def _b64(value: Any, what: str) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(f"{what}: not valid base64") from None


def object_data(obj: Mapping[str, Any], secret: bool) -> dict[str, bytes]:
    """A ConfigMap's or Secret's keys as the bytes the volume holds."""
    data: dict[str, bytes] = {}
    for k, v in (obj.get("data") or {}).items():
        data[k] = _b64(v, f"key {k!r}") if secret else str(v).encode()
    if secret:
        data.update({k: str(v).encode() for k, v in (obj.get("stringData") or {}).items()})
    for k, v in (obj.get("binaryData") or {}).items():
        data[k] = _b64(v, f"binaryData key {k!r}")
    return data


def source_ref(pod: Mapping[str, Any], volume: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The (kind, name) of every ConfigMap and Secret a volume projects."""
    out: list[tuple[str, str]] = []
    sources = [volume, *((volume.get("projected") or {}).get("sources") or [])]
    for s in sources:
        if "configMap" in s:
            out.append(("ConfigMap", str((s["configMap"] or {}).get("name") or "")))
        if "secret" in s:
            ref = s["secret"] or {}
            out.append(("Secret", str(ref.get("secretName") or ref.get("name") or "")))
    return out


def volume_files(pod: Mapping[str, Any], volume: Mapping[str, Any], src: VolumeSources) -> Files:
    """The files (relative path -> (content, mode)) of a file-backed volume."""
    ns = pod["metadata"].get("namespace", "default")
    name = volume["name"]

    def fetch(kind: str, ref: Mapping[str, Any], lookup: ObjectLookup, secret: bool) -> Files:
        obj_name = ref.get("name") or ref.get("secretName", "")
        obj = lookup(ns, obj_name)
        what = f"volume {name}: {kind} {ns}/{obj_name}"
        if obj is None:
            if ref.get("optional"):
                return {}
            raise ConfigError(f'volume {name}: {kind} "{obj_name}" not found')
        try:
            data = object_data(obj, secret)
        except ConfigError as err:
            raise ConfigError(f"{what}: {err}") from None
        return _key_items(data, ref.get("items"), what, bool(ref.get("optional")))

    if "configMap" in volume:
        return fetch("configmap", volume["configMap"], src.configmaps, False)
    if "secret" in volume:
        return fetch("secret", volume["secret"], src.secrets, True)
    if "downwardAPI" in volume:
        return _downward_files(pod, volume["downwardAPI"].get("items") or [], src.node)
    files: Files = {}
    for source in volume["projected"].get("sources") or []:
        if "configMap" in source:
            files.update(fetch("configmap", source["configMap"], src.configmaps, False))
        elif "secret" in source:
            files.update(fetch("secret", source["secret"], src.secrets, True))
        elif "downwardAPI" in source:
            files.update(_downward_files(pod, source["downwardAPI"].get("items") or [], src.node))
        elif "serviceAccountToken" in source:
            files.update(_token_file(pod, source["serviceAccountToken"] or {}, src))
        else:
            raise ConfigError(f"volume {name}: unsupported projected source {sorted(source)}")
    return files


def _token_file(pod: Mapping[str, Any], source: Mapping[str, Any], src: VolumeSources) -> Files:
    """A projected ServiceAccount token (none yet when it cannot be had: the
    refresh writes it later)."""
    path = str(source.get("path") or "")
    if not path:
        raise ConfigError("serviceAccountToken: path is required")
    if src.tokens is None:
        return {}
    token = src.tokens(pod, str(source.get("audience") or ""),
                       int(source.get("expirationSeconds") or 3600))  # fmt: skip
    return {path: (token.encode(), None)} if token else {}
