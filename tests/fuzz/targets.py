"""Fuzz targets for every parser that takes outside input (issue 17): tar
layers, image manifests, registry responses, CRI request fields, CNI
configs and CNI_ARGS, DNS messages, SPDY and WebSocket frames here; image
indexes (image_index.py), API objects and patches (api_objects.py) and the
agent endpoint's HTTP (agent_http.py) in modules of their own.

Each target is a Hypothesis strategy and a `check(input)` that returns
"ok" (a correct result, its invariants checked) or "rejected" (a clear
error of the kinds the parser documents); anything else it raises is a
crash. tests/fuzz/test_fuzz.py runs a short seeded run of each target;
bench/fuzz.py runs at least 10,000 inputs per target and also counts hangs
and leaked fds, threads and mounts.
"""

from __future__ import annotations

import contextlib
import email.message
import gzip
import io
import ipaddress
import json
import os
import shutil
import struct
import tarfile
import tempfile
import zlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard
from hypothesis import strategies as st

from agent.proxy import dns_wire
from machinery.streaming import spdy_frames, websocket
from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.cni import iptables
from runtime.cni.skel import CNIError, parse, parse_cni_args
from runtime.cri import validate
from runtime.image import mediatypes
from runtime.image.config import Credentials, Endpoint, TLSConfig
from runtime.image.errors import BadContent, Unauthorized
from runtime.image.pull import parse_manifest, validate_manifest_doc
from runtime.image.registry import PullSettings, RepositoryClient
from runtime.image.unpack import Limits, unpack_layer
from tests.fuzz.agent_http import check_http, http_inputs, http_session
from tests.fuzz.api_objects import api_inputs, api_session, check_api
from tests.fuzz.image_index import check_index, index_inputs

Check = Callable[[Any], str]


@dataclass(frozen=True)
class Target:
    """`session`, when given, is entered around a run: the resources the
    checks share (a registry, a live endpoint), released before leaks are
    counted."""

    name: str
    strategy: st.SearchStrategy[Any]
    check: Check
    session: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext


# -- tar layers -----------------------------------------------------------------

_names = st.one_of(
    st.sampled_from(
        ["a", "a/b", "../x", "/etc/passwd", "a/../../x", ".wh.a", "a/.wh..wh..opq", ".", "",
         "a/", "dev/null", "x" * 300, "a/b/c/d", "é/ü", "a\x00b", ".wh..wh..opq"]
    ),
    st.text(alphabet="ab./.wh\x00é", max_size=40),
)  # fmt: skip
_types = st.sampled_from(
    [tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE,
     tarfile.BLKTYPE, tarfile.FIFOTYPE, tarfile.CONTTYPE, b"Z", tarfile.GNUTYPE_SPARSE]
)  # fmt: skip
_entry = st.tuples(
    _names,
    _types,
    _names,  # link target
    st.binary(max_size=64),
    st.integers(0, 0o7777),
    st.dictionaries(
        st.sampled_from(
            [
                "path",
                "linkpath",
                "size",
                "uid",
                "gid",
                "mtime",
                "SCHILY.xattr.user.x",
                "SCHILY.xattr.trusted.overlay.opaque",
                "comment",
            ]
        ),
        st.text(max_size=20),
        max_size=3,
    ),
)
tar_inputs = st.tuples(
    st.lists(_entry, max_size=6),
    st.sampled_from(["plain", "gzip", "gzip2", "trunc", "flip", "zstd", "zstd-trunc"]),
    st.integers(0, 1 << 16),
)


def _tar(entries: list[tuple[Any, ...]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, kind, link, data, mode, pax in entries:
            info = tarfile.TarInfo(name.replace("\x00", "") or "x")
            info.type, info.mode, info.linkname = kind, mode, link.replace("\x00", "")
            info.pax_headers = {k: v for k, v in pax.items() if "\x00" not in k + v}
            info.size = len(data) if kind in (tarfile.REGTYPE, tarfile.CONTTYPE) else 0
            try:
                tf.addfile(info, io.BytesIO(data) if info.size else None)
            except (ValueError, UnicodeError):
                continue
    return buf.getvalue()


def check_tar(inp: tuple[list[tuple[Any, ...]], str, int]) -> str:
    entries, shape, knob = inp
    data = _tar(entries)
    if shape == "gzip":
        data = gzip.compress(data)
    elif shape == "gzip2":  # two members
        data = gzip.compress(data[: len(data) // 2]) + gzip.compress(data[len(data) // 2 :])
    elif shape == "trunc":
        data = gzip.compress(data)[: knob % max(1, len(data))]
    elif shape.startswith("zstd"):
        data = zstandard.ZstdCompressor().compress(data)
        if shape == "zstd-trunc":
            data = data[: knob % max(1, len(data))]
    elif shape == "flip" and data:
        pos = knob % len(data)
        data = data[:pos] + bytes([data[pos] ^ 0xFF]) + data[pos + 1 :]
    base = Path(tempfile.mkdtemp(prefix="fuzz-tar-"))
    try:
        (base / "fs").mkdir()
        (base / "outside").mkdir()
        limits = Limits(header_bytes=4096, header_total=65536, bytes=1 << 20, inodes=100)
        try:
            unpack_layer(io.BytesIO(data), base / "fs", readahead=False, limits=limits)
        except BadContent:  # UnsafeEntry included
            return "rejected"
        finally:
            # nothing ever lands outside the layer directory
            assert not any((base / "outside").iterdir()), "wrote outside the layer"
            assert sorted(p.name for p in base.iterdir()) == ["fs", "outside"]
        return "ok"
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- manifests and indexes ----------------------------------------------------------

_json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
    st.text(max_size=20),
    st.sampled_from(["sha256:" + "a" * 64, "linux", "amd64", "arm64", "v8", "unknown",
                     mediatypes.OCI_MANIFEST, mediatypes.OCI_INDEX]),
)  # fmt: skip
_json_any = st.recursive(
    _json_leaf,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "layers",
                    "config",
                    "manifests",
                    "platform",
                    "os",
                    "architecture",
                    "variant",
                    "digest",
                    "size",
                    "mediaType",
                    "schemaVersion",
                    "x",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)
_D = "sha256:" + "a" * 64
_GOOD_MANIFEST: dict[str, Any] = {
    "schemaVersion": 2,
    "mediaType": mediatypes.OCI_MANIFEST,
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": _D, "size": 7},
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": _D,
                "size": 9}],
}  # fmt: skip
_GOOD_INDEX: dict[str, Any] = {
    "schemaVersion": 2,
    "mediaType": mediatypes.OCI_INDEX,
    "manifests": [{"mediaType": mediatypes.OCI_MANIFEST, "digest": _D, "size": 5,
                   "platform": {"os": "linux", "architecture": "amd64"}}],
}  # fmt: skip
_GOOD_CONFIG = {"rootfs": {"type": "layers", "diff_ids": [_D]}}


def _mutate(doc: Any, path: list[str], value: Any) -> Any:
    """`doc` with the value at `path` (keys, or list index 0) replaced."""
    if not path:
        return value
    if isinstance(doc, dict):
        return {**doc, path[0]: _mutate(doc.get(path[0]), path[1:], value)}
    if isinstance(doc, list) and doc:
        return [_mutate(doc[0], path[1:], value), *doc[1:]]
    return doc


_paths = st.sampled_from(
    [[], ["layers"], ["layers", "0"], ["layers", "0", "size"], ["layers", "0", "digest"],
     ["config"], ["config", "digest"], ["mediaType"], ["manifests"], ["manifests", "0"],
     ["manifests", "0", "platform"], ["manifests", "0", "platform", "os"],
     ["manifests", "0", "size"], ["rootfs", "diff_ids"], ["rootfs"]]
)  # fmt: skip
manifest_inputs = st.one_of(
    st.tuples(_json_any, st.sampled_from(["", mediatypes.OCI_MANIFEST]), _json_any),
    st.builds(
        lambda base, path, value, cpath, cvalue, mutate_config: (
            _mutate(base, path, value),
            "",
            _mutate(_GOOD_CONFIG, cpath, cvalue) if mutate_config else _GOOD_CONFIG,
        ),
        st.sampled_from([_GOOD_MANIFEST, _GOOD_INDEX]),
        _paths,
        _json_any,
        _paths,
        _json_any,
        st.booleans(),
    ),
)


def check_manifest(inp: tuple[Any, str, Any]) -> str:
    doc, header_type, config = inp
    body = json.dumps(doc).encode()
    try:
        validate_manifest_doc(doc, "fuzzed manifest")
        kind = mediatypes.detect_type(doc, header_type)
        if kind in mediatypes.INDEX_TYPES:
            desc = mediatypes.select_platform(doc, ("linux", "amd64", ""))
            assert desc is None or isinstance(desc.get("digest"), str)
            return "ok"
        image = parse_manifest(body, kind, json.dumps(config).encode(), "sha256:" + "c" * 64)
        assert all(lr.size >= 0 for lr in image.layers)
        return "ok"
    except BadContent:
        return "rejected"


# -- registry responses -------------------------------------------------------------------

_challenge = st.one_of(
    st.text(max_size=80),
    st.builds(
        lambda scheme, params: f"{scheme} " + ",".join(f'{k}="{v}"' for k, v in params),
        st.sampled_from(["Bearer", "Basic", "bearer", "Digest", ""]),
        st.lists(
            st.tuples(
                st.sampled_from(["realm", "service", "scope", "error", "x"]),
                st.one_of(
                    st.sampled_from(
                        [
                            "https://auth.example/token",
                            "http://auth.example/t",
                            "file:///etc/passwd",
                            "https://127.0.0.1:1/t",
                            "",
                        ]
                    ),
                    st.text(alphabet='abc:/"\\ ,=', max_size=20),
                ),
            ),
            max_size=4,
        ),
    ),
)
registry_inputs = st.tuples(
    st.sampled_from([200, 301, 302, 307, 401, 403, 404, 500, 999]),
    _challenge,
    st.one_of(st.none(), st.integers(-5, 1 << 40).map(str), st.text(max_size=5)),  # lying length
    st.binary(max_size=256),
    st.sampled_from(["http://169.254.169.254/x", "https://reg.example/v2/x", "/relative",
                     "ftp://x/", "", "http://reg.example/v2/app/manifests/1"]),
)  # fmt: skip


class _Resp:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = email.message.Message()
        for k, v in headers.items():
            self.headers[k] = v
        self._body = body
        self.length = None

    def read(self, n: int = -1) -> bytes:
        out, self._body = (self._body, b"") if n < 0 else (self._body[:n], self._body[n:])
        return out

    def close(self) -> None:
        pass

    def __enter__(self) -> _Resp:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def check_registry(inp: tuple[int, str, str | None, bytes, str]) -> str:
    status, challenge, length, body, location = inp
    ep = Endpoint("https", "reg.example", "/v2", "app", TLSConfig(), Credentials(), False)
    client = RepositoryClient(ep, Credentials(username="u", password="p"), PullSettings())
    client.resolve = lambda host: ["192.0.2.1"]  # no DNS
    calls = [0]

    def raw(method: str, url: str, headers: dict[str, str], data: bytes | None = None) -> _Resp:
        calls[0] += 1
        assert calls[0] < 20, "request loop"
        if "Authorization" in headers:
            assert client.may_send_credentials(url)
        hdrs = {"WWW-Authenticate": challenge, "Location": location}
        if length is not None:
            hdrs["Content-Length"] = length
        return _Resp(status if calls[0] < 3 else 404, hdrs, body)

    client._raw = raw  # type: ignore[method-assign,assignment]
    try:
        got, _, _ = client.get_manifest("1")
    except (errors.NotFound, errors.Unavailable, Unauthorized) as exc:
        text = str(exc)
        assert "\n" not in text and len(text) < 2000, text
        return "rejected"
    assert len(got) <= 4 << 20
    return "ok"


# -- CRI request fields ---------------------------------------------------------------------

_field_text = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["web-0", "default", "p;IP=1.2.3.4", "../../etc", "/abs", "a\nb", "x" * 300,
                     "c/0.log", "0.0.0.0", "::1", "10.0.0.1\n-A INPUT", "kube-system"]),
)  # fmt: skip
_VALID = (
    "web-0",
    "default",
    "0b5c-11",
    "web-0",
    "/var/log/pods/x",
    "/kubepods",
    "",
    "c/0.log",
    "c",
)
# one field fuzzed at a time, the others valid, so acceptance is reachable
cri_inputs = st.tuples(st.integers(0, len(_VALID) - 1), _field_text).map(
    lambda iv: tuple(iv[1] if i == iv[0] else v for i, v in enumerate(_VALID))
)


def check_cri(inp: tuple[str, ...]) -> str:
    name, ns, uid, hostname, log_dir, cg, host_ip, log_path, cname = inp
    pod = api_pb2.PodSandboxConfig(
        metadata=api_pb2.PodSandboxMetadata(name=name, namespace=ns, uid=uid),
        hostname=hostname,
        log_directory=log_dir,
    )
    pod.linux.cgroup_parent = cg
    pod.port_mappings.append(api_pb2.PortMapping(host_port=80, container_port=80, host_ip=host_ip))
    ctr = api_pb2.ContainerConfig(
        metadata=api_pb2.ContainerMetadata(name=cname),
        image=api_pb2.ImageSpec(image="busybox"),
        log_path=log_path,
    )
    try:
        validate.sandbox_config(pod)
        validate.container_config(ctr)
    except errors.InvalidArgument as exc:
        assert str(exc).split(" ", 1)[0].strip(":") != "", "the error names no field"
        return "rejected"
    # accepted: nothing that could inject into CNI_ARGS, a path or a rule script
    for value in (name, ns, uid, hostname, cname):
        assert value.isprintable() and not set(value) & set(";= /\n"), value
    assert not log_path.startswith("/") and ".." not in log_path.split("/")
    assert ".." not in cg.split("/")
    if host_ip:
        ipaddress.ip_address(host_ip)
    return "ok"


# -- CNI ----------------------------------------------------------------------------------------

_GOOD_CONF = {"cniVersion": "1.0.0", "name": "net", "type": "skiff-cni", "bridge": "cni0",
              "ipam": {"type": "skiff-ipam", "subnet": "10.88.0.0/16"}}  # fmt: skip
cni_inputs = st.one_of(
    st.tuples(st.just("args"), st.one_of(
        st.text(max_size=60),
        st.lists(st.tuples(st.sampled_from(["K8S_POD_NAME", "IP", "IgnoreUnknown", ""]),
                           st.text(alphabet="ab1;=\n .", max_size=8)), max_size=4)
        .map(lambda kv: ";".join(f"{k}={v}" for k, v in kv)),
    )),
    st.tuples(st.just("stdin"), st.one_of(
        st.binary(max_size=200),
        st.builds(lambda p, v: json.dumps(_mutate(_GOOD_CONF, p, v)).encode(),
                  st.sampled_from([[], ["cniVersion"], ["name"], ["type"], ["ipam"],
                                   ["ipam", "subnet"], ["bridge"]]), _json_any),
    )),
    st.tuples(st.just("hostIP"), st.one_of(
        st.text(alphabet="0123456789abcdef:.\n ", max_size=45),
        st.ip_addresses().map(str),
    )),
)  # fmt: skip


def check_cni(inp: tuple[str, Any]) -> str:
    kind, value = inp
    try:
        if kind == "args":
            parsed = parse_cni_args(value)
            assert all(k and v.isprintable() for k, v in parsed.items())
        elif kind == "stdin":
            env = {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "c", "CNI_NETNS": "/x",
                   "CNI_IFNAME": "eth0", "CNI_PATH": "/opt/cni/bin"}  # fmt: skip
            parse(env, value)
        else:
            mapping = {"hostPort": 80, "containerPort": 80, "protocol": "tcp", "hostIP": value}
            v6 = ":" in value
            lines = iptables.hostport_lines("c", "n", "fd00::2" if v6 else "10.88.0.2", [mapping])
            assert all("\n" not in line for line in lines)
            if value:
                ipaddress.ip_address(value)  # accepted: really an address
    except CNIError:
        return "rejected"
    return "ok"


# -- DNS ------------------------------------------------------------------------------------------

_dns_header = st.builds(
    lambda i, flags, qd, an: struct.pack(">HHHHHH", i, flags, qd, an, 0, 0),
    st.integers(0, 65535), st.integers(0, 65535), st.integers(0, 3), st.integers(0, 3),
)  # fmt: skip
_dns_body = st.lists(
    st.one_of(
        st.binary(max_size=20),
        st.sampled_from([b"\xc0\x0c", b"\xc0\x00", b"\x3fxxxxxxxx", b"\x00\x01\x00\x01",
                         b"\x07example\x03com\x00", b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04"]),
    ),
    max_size=8,
).map(b"".join)  # fmt: skip
dns_inputs = st.one_of(st.binary(max_size=300), st.tuples(_dns_header, _dns_body).map(b"".join))


def check_dns(data: bytes) -> str:
    try:
        msg = dns_wire.parse(data)
    except dns_wire.FormatError:
        return "rejected"
    for q in msg.questions:
        assert len(q.name) <= 255 * 4
    return "ok"


# -- SPDY and WebSocket frames ----------------------------------------------------------------------


def _spdy_frame(kind: int, flags: int, payload: bytes) -> tuple[bytes, bytes]:
    head = struct.pack(">HHI", 0x8000 | 3, kind, (flags << 24) | len(payload))
    return head, payload


_zbomb = zlib.compress(bytes(4 << 20))
spdy_inputs = st.one_of(
    st.tuples(st.binary(min_size=8, max_size=8), st.binary(max_size=200)),
    st.builds(
        _spdy_frame,
        st.integers(0, 12),
        st.integers(0, 255),
        st.one_of(
            st.binary(max_size=100),
            st.binary(min_size=10, max_size=10).map(lambda b: b + _zbomb),
        ),
    ),
)


def check_spdy(inp: tuple[bytes, bytes]) -> str:
    head, payload = inp
    framer = spdy_frames.Framer()
    try:
        framer.decode(head, payload)
    except (spdy_frames.ProtocolError, ValueError):
        return "rejected"
    return "ok"


ws_inputs = st.one_of(
    st.binary(max_size=64),
    st.builds(
        lambda op, mask, n, payload: bytes([0x80 | op, (0x80 if mask else 0) | n]) + payload,
        st.integers(0, 15),
        st.booleans(),
        st.sampled_from([0, 5, 125, 126, 127]),
        st.binary(max_size=40),
    ),
)


def check_ws(data: bytes) -> str:
    try:
        frame = websocket.read_frame(io.BytesIO(data), expect_masked=None)
    except (websocket.WebSocketError, EOFError):
        return "rejected"
    assert len(frame.payload) <= len(data)
    return "ok"


TARGETS = [
    Target("tar_layer", tar_inputs, check_tar),
    Target("image_manifest", manifest_inputs, check_manifest),
    Target("registry_response", registry_inputs, check_registry),
    Target("cri_fields", cri_inputs, check_cri),
    Target("cni", cni_inputs, check_cni),
    Target("dns_message", dns_inputs, check_dns),
    Target("spdy_frame", spdy_inputs, check_spdy),
    Target("websocket_frame", ws_inputs, check_ws),
    Target("image_index", index_inputs, check_index),
    Target("api_object", api_inputs, check_api, api_session),
    Target("agent_http", http_inputs, check_http, http_session),
]


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def mounts() -> int:
    """Mounts under the targets' own temp dirs (the host's other mounts
    change under concurrent tests)."""
    with open("/proc/self/mountinfo") as f:
        return sum(1 for line in f if "/fuzz-" in line.split()[4])
