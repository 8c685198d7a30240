"""Kubernetes' protobuf: every kind's example round-trips through its message,
the bytes are Kubernetes' (field numbers, Time, IntOrString, Quantity,
bytes, map entries), Go's zero values read as JSON reads them, and hostile
bodies are refused naming the problem before any work their claims ask."""

from __future__ import annotations

import struct
import time
from typing import Any

import pytest

from controlplane.api import kinds
from controlplane.api.k8sproto import codec, envelope, schema
from controlplane.api.k8sproto.codec import ProtobufError
from controlplane.api.k8sproto.duration import format_duration, parse_duration
from tests.fakes.k8sproto_examples import EXAMPLES


def ld(number: int, value: bytes) -> bytes:
    """A length-delimited field."""
    out = bytearray()
    codec.put_bytes(out, codec.encode({}, schema.message("meta/v1.Status"))[:0] or
                    bytes(schema._varint(number << 3 | 2)), value)  # fmt: skip
    return bytes(out)


def vi(number: int, value: int) -> bytes:
    out = bytearray(schema._varint(number << 3))
    codec.put_varint(out, value)
    return bytes(out)


@pytest.mark.parametrize("obj", EXAMPLES, ids=lambda o: f"{o['apiVersion']}/{o['kind']}")
def test_every_example_round_trips(obj: dict[str, Any]) -> None:
    data = envelope.encode(obj)
    assert data.startswith(b"k8s\x00")
    assert envelope.decode(data) == obj


def test_every_builtin_kind_skiff_serves_has_protobuf_and_an_example() -> None:
    covered = {(o["apiVersion"], o["kind"]) for o in EXAMPLES}
    for info in kinds.builtin_kinds():
        custom_in_kubernetes = (
            info.group.endswith("volcano.sh") or info.group == "apiextensions.k8s.io"
        )
        if info.group == "metrics.k8s.io":
            # metrics-server's group (an extension API server in Kubernetes); the
            # built-in one answers JSON, which kubectl top and the HPA ask for.
            assert not envelope.supported(info.api_version, info.kind), info.key
            continue
        if custom_in_kubernetes:
            # Volcano's kinds are CRDs in Kubernetes (and CRDs' own schema is
            # apiextensions'): JSON only, as kube-apiserver serves them.
            assert not envelope.supported(info.api_version, info.kind), info.key
            continue
        assert envelope.supported(info.api_version, info.kind), info.key
        assert envelope.supported(info.api_version, f"{info.kind}List") or info.create_only
        assert (info.api_version, info.kind) in covered, info.key


def test_the_bytes_are_kubernetes_own() -> None:
    # ConfigMap {metadata = 1 {name = 1}, data = 2 map entry {key = 1, value = 2}}
    cm = {"metadata": {"name": "a"}, "data": {"k": "v"}}
    raw = codec.encode(cm, schema.message("core/v1.ConfigMap"))
    assert raw == ld(1, ld(1, b"a")) + ld(2, ld(1, b"k") + ld(2, b"v"))
    # Time {seconds = 1, nanos = 2}; ObjectMeta.creationTimestamp = 8
    meta = codec.encode({"creationTimestamp": "1970-01-01T00:01:40Z"},
                        schema.message("meta/v1.ObjectMeta"))  # fmt: skip
    assert meta == ld(8, vi(1, 100))
    # IntOrString {type = 1, intVal = 2, strVal = 3}; ServicePort.targetPort = 4
    port = schema.message("core/v1.ServicePort")
    assert codec.encode({"targetPort": 8080}, port) == ld(4, vi(1, 0) + vi(2, 8080))
    assert codec.encode({"targetPort": "http"}, port) == ld(4, vi(1, 1) + ld(3, b"http"))
    # Quantity {string = 1}; Secret.data bytes; a negative int32 as ten bytes
    rl = codec.encode({"limits": {"cpu": "100m"}}, schema.message("core/v1.ResourceRequirements"))
    assert rl == ld(1, ld(1, b"cpu") + ld(2, ld(1, b"100m")))
    secret = codec.encode({"data": {"p": "AAE="}}, schema.message("core/v1.Secret"))
    assert secret == ld(2, ld(1, b"p") + ld(2, b"\x00\x01"))
    pc = codec.encode({"value": -1}, schema.message("scheduling/v1.PriorityClass"))
    assert pc == b"\x10" + b"\xff" * 9 + b"\x01"
    # The envelope: magic, Unknown {typeMeta {apiVersion, kind}, raw, "", ""}
    doc = envelope.encode({"apiVersion": "v1", "kind": "ConfigMap", **cm})
    assert (
        doc
        == b"k8s\x00" + ld(1, ld(1, b"v1") + ld(2, b"ConfigMap")) + ld(2, raw) + b"\x1a\x00\x22\x00"
    )


def test_go_zero_values_read_as_json_has_them() -> None:
    # Go writes every non-pointer field, zero or not; a pointer only when set.
    spec = schema.message("apps/v1.DeploymentSpec")
    go = vi(1, 0) + vi(5, 0) + vi(7, 0) + ld(3, ld(1, ld(1, b"")))
    # replicas (*int32) 0 is kept; minReadySeconds 0 and paused false are unset
    assert codec.decode(go, spec) == {"replicas": 0, "template": {"metadata": {}}}
    container = schema.message("core/v1.Container")
    assert codec.decode(ld(1, b"c") + ld(2, b"") + ld(13, b""), container) == {"name": "c"}
    # a zero Time (an empty message) is null; a non-pointer IntOrString 0 is unset
    assert codec.decode(ld(8, b""), schema.message("meta/v1.ObjectMeta")) == {}
    assert codec.decode(ld(4, vi(1, 0)), schema.message("core/v1.ServicePort")) == {}


def test_unknown_fields_are_skipped_and_packed_integers_read() -> None:
    status = schema.message("core/v1.ConfigMap")
    unknown = vi(99, 5) + ld(98, b"whatever") + b"\xa5\x06" + b"\x01\x02\x03\x04"  # 100: fixed32
    assert codec.decode(unknown + ld(1, ld(1, b"a")), status) == {"metadata": {"name": "a"}}
    groups = schema.message("core/v1.PodSecurityContext")
    packed = ld(4, b"\x01\x02\x03")  # supplementalGroups = 4, repeated int64
    assert codec.decode(packed, groups) == {"supplementalGroups": [1, 2, 3]}


def test_watch_frames_are_length_prefixed_watch_events() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    frame = envelope.watch_frame("ADDED", envelope.encode(pod))
    (size,) = struct.unpack(">I", frame[:4])
    assert size == len(frame) - 4
    assert frame[4:6] == b"\n\x05" and frame[6:11] == b"ADDED"
    assert envelope.read_frames(frame + frame) == [("ADDED", pod), ("ADDED", pod)]


def test_status_errors_encode() -> None:
    doc = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": 'pods "x" not found', "reason": "NotFound", "code": 404,
           "details": {"name": "x", "kind": "pods"}}  # fmt: skip
    assert envelope.decode(envelope.status(doc)) == doc


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"", "magic"),
        (b'{"kind":"Pod"}', "must start with the magic"),
        (b"k8s\x00", "empty body"),
        (b"k8s\x00" + ld(2, b"x"), "names no kind"),
        (b"k8s\x00" + b"\x0a\xff\xff\xff\xff\x0f", "length 4294967295 past the end"),
        (b"k8s\x00" + b"\x0a\x80\x80\x80", "truncated varint"),
        (b"k8s\x00" + b"\x0a" + b"\xff" * 11, "longer than 10 bytes"),
        (b"k8s\x00" + b"\x0b", "wire type 3"),
        (envelope.wrap("v1", "Pod", ld(1, ld(1, b"\xff\xfe"))), "name: not valid UTF-8"),
        (envelope.wrap("v1", "Pod", b"\x12\xf0\xff\xff\xff\x07"), "spec: length"),
        (envelope.wrap("example.com/v1", "Widget", b""), "no protobuf serialization"),
        (b"k8s\x00" + ld(1, ld(1, b"v1") + ld(2, b"Pod")) + ld(3, b"gzip"), "contentEncoding"),
    ],
)
def test_hostile_bodies_are_refused_saying_why(body: bytes, problem: str) -> None:
    with pytest.raises(ProtobufError, match=problem):
        envelope.decode(body)


def test_nesting_is_bounded() -> None:
    # A RawExtension may hold another protobuf document: nest one 200 deep.
    doc = envelope.wrap("v1", "List", b"")
    for _ in range(200):
        doc = envelope.wrap("v1", "List", ld(2, ld(1, doc)))
    with pytest.raises(ProtobufError, match="nested more than 100"):
        envelope.decode(doc)


def test_lying_lengths_cost_nothing() -> None:
    # A claimed 2 GiB repeated field in a 20-byte body is refused at once.
    body = envelope.wrap("v1", "Pod", b"\x12\x06" + b"\x12\x80\x80\x80\x80\x08")
    start = time.process_time()
    for _ in range(1000):
        with pytest.raises(ProtobufError, match="past the end"):
            envelope.decode(body)
    assert time.process_time() - start < 5  # not a timing claim: 1000 tiny refusals


@pytest.mark.parametrize(
    ("nanos", "text"),
    [(0, "0s"), (1, "1ns"), (1500, "1.5µs"), (1_500_000, "1.5ms"), (90 * 10**9, "1m30s"),
     (3600 * 10**9, "1h0m0s"), (3723_500_000_000, "1h2m3.5s"), (-(10**9), "-1s")],
)  # fmt: skip
def test_durations_are_go_text(nanos: int, text: str) -> None:
    assert format_duration(nanos) == text
    assert parse_duration(text) == nanos


def test_a_list_message() -> None:
    items = [{"metadata": {"name": f"c{i}"}, "data": {"i": str(i)}} for i in range(3)]
    doc = envelope.encode_list("v1", "ConfigMap", items, {"resourceVersion": "9"})
    assert envelope.decode(doc) == {"apiVersion": "v1", "kind": "ConfigMapList",
                                    "metadata": {"resourceVersion": "9"}, "items": items}  # fmt: skip


@pytest.mark.parametrize("obj", EXAMPLES, ids=lambda o: f"{o['apiVersion']}/{o['kind']}")
def test_the_c_runtime_and_the_python_writer_and_readers_agree(obj: dict[str, Any]) -> None:
    from controlplane.api.k8sproto import fast

    message = codec.message_of(obj["apiVersion"], obj["kind"])
    in_c = fast.encode(obj, message)
    assert in_c is not None, "protobuf's C runtime took the example"
    here = codec.encode_here(obj, message)
    doc = envelope.wrap(obj["apiVersion"], obj["kind"], in_c)
    assert envelope.decode(doc) == codec.decode_document(doc) == obj
    assert codec.decode(here, message) == codec.decode(in_c, message)
