"""The compiled message table: Message objects the codec walks, and which
message each built-in kind is.

`table.TABLE` (facts from Kubernetes' generated.proto) is compiled once, at
first use, into one `Message` per message name with its fields indexed
both ways: by wire key (number << 3 | wire type) for decoding and by JSON
name for encoding, each with its tag bytes ready. The messages whose JSON
is not an object (Time, MicroTime, Duration, Quantity, IntOrString,
RawExtension, FieldsV1, the array wrappers) get a `special` code the codec
handles by hand. `kind_message(api_version, kind)` answers which message a
built-in kind's objects are ("v1", "Pod" -> core/v1.Pod), None for anything
else (custom resources, Volcano's kinds: Kubernetes serves those as JSON
only). Pure data: no I/O, no imports of the server.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from controlplane.api.k8sproto.table import TABLE

# Scalar and special codes (Field.code, Message.special).
STRING, BYTES, BOOL, INT, MESSAGE = range(5)
TIME, MICRO_TIME, DURATION, QUANTITY, INT_OR_STRING, RAW, FIELDS_V1, ARRAY = range(5, 13)
# Field.mode
SINGLE, REPEATED, MAP = range(3)

_SCALARS = {"s": STRING, "y": BYTES, "b": BOOL, "i32": INT, "i64": INT}
SPECIAL = {
    "meta/v1.Time": TIME,
    "meta/v1.MicroTime": MICRO_TIME,
    "meta/v1.Duration": DURATION,
    "meta/v1.FieldsV1": FIELDS_V1,
    "resource.Quantity": QUANTITY,
    "intstr.IntOrString": INT_OR_STRING,
    "runtime.RawExtension": RAW,
}

# The API group of each package of the table ("" is the core group).
GROUPS = {
    "core": "",
    "admissionregistration": "admissionregistration.k8s.io",
    "apiregistration": "apiregistration.k8s.io",
    "apps": "apps",
    "batch": "batch",
    "autoscaling": "autoscaling",
    "coordination": "coordination.k8s.io",
    "flowcontrol": "flowcontrol.apiserver.k8s.io",
    "scheduling": "scheduling.k8s.io",
    "storage": "storage.k8s.io",
    "rbac": "rbac.authorization.k8s.io",
    "authorization": "authorization.k8s.io",
    "authentication": "authentication.k8s.io",
    "events": "events.k8s.io",
    "policy": "policy",
    "networking": "networking.k8s.io",
    "discovery": "discovery.k8s.io",
    "node": "node.k8s.io",
    "certificates": "certificates.k8s.io",
}


@dataclass(eq=False)
class Field:
    number: int
    name: str  # the JSON name ("" for an inlined message)
    code: int  # STRING .. MESSAGE, or a special message's code
    mode: int  # SINGLE, REPEATED or MAP (map<string, T>: T is code/message)
    pointer: bool  # a Go pointer: a zero value is a value, kept when decoded
    message: Message | None = None  # for MESSAGE and the specials
    tag: bytes = b""  # the key as written: varint(number << 3 | wire type)
    packed_tag: int = -1  # repeated integers may also come packed (wire type 2)


@dataclass(eq=False)
class Message:
    name: str
    special: int = MESSAGE
    fields: list[Field] = field(default_factory=list)
    by_key: dict[int, Field] = field(default_factory=dict)
    by_name: dict[str, Field] = field(default_factory=dict)
    inline: Field | None = None  # the field JSON writes inline (EphemeralContainer)


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _wire(code: int, mode: int) -> int:
    return 0 if code in (BOOL, INT) and mode != MAP else 2


def _compile() -> dict[str, Message]:
    rows: list[tuple[str, bool, list[str]]] = []
    messages: dict[str, Message] = {}
    for line in TABLE.split("\n"):
        if not line:
            continue
        words = line.split()
        name, rest = words[0], words[1:]
        array = bool(rest) and rest[0] == "!array"
        if array:
            rest = rest[1:]
        rows.append((name, array, rest))
        special = SPECIAL.get(name, ARRAY if array else MESSAGE)
        messages[name] = Message(name, special)
    for name, _array, specs in rows:
        message = messages[name]
        package = name.rpartition(".")[0]
        for spec in specs:
            parts = spec.split(",")
            number, json_name, type_ = int(parts[0]), parts[1], parts[2]
            flags = parts[3] if len(parts) > 3 else ""
            mode = SINGLE
            if type_.startswith("[]"):
                mode, type_ = REPEATED, type_[2:]
            elif type_.startswith("{"):
                mode, type_ = MAP, type_[1:-1]
            code = _SCALARS.get(type_)
            sub = None
            if code is None:
                sub = messages[type_ if "." in type_ else f"{package}.{type_}"]
                code = sub.special
            f = Field(number, json_name, code, mode, "p" in flags, sub)
            wire = _wire(code, mode)
            key = number << 3 | wire
            f.tag = _varint(key)
            message.by_key[key] = f
            if mode == REPEATED and wire == 0:
                f.packed_tag = number << 3 | 2
                message.by_key[f.packed_tag] = f
            message.fields.append(f)
            if "i" in flags:
                message.inline = f
            else:
                message.by_name[json_name] = f
    return messages


_lock = threading.Lock()
_messages: dict[str, Message] | None = None
_kinds: dict[tuple[str, str], Message] = {}


def messages() -> dict[str, Message]:
    """Every message by name ("core/v1.Pod"), compiled on first use."""
    global _messages
    if _messages is None:
        with _lock:
            if _messages is None:
                compiled = _compile()
                for name, message in compiled.items():
                    package, _, kind = name.rpartition(".")
                    group, _, version = package.partition("/")
                    if group not in GROUPS or not version:
                        continue
                    api_version = f"{GROUPS[group]}/{version}" if GROUPS[group] else version
                    _kinds[(api_version, kind)] = message
                _messages = compiled
    return _messages


def message(name: str) -> Message:
    return messages()[name]


# metav1's kinds, which every group version serves (a DeleteOptions body says
# apps/v1 on a Deployment's delete) and Status, which says v1.
META_KINDS = frozenset({"Status", "DeleteOptions", "CreateOptions", "UpdateOptions",
                        "PatchOptions", "GetOptions", "ListOptions", "WatchEvent"})  # fmt: skip


def kind_message(api_version: str, kind: str) -> Message | None:
    """The message of a built-in kind's objects (or of its XList), None when
    Kubernetes has no protobuf for it."""
    compiled = messages()
    found = compiled.get(f"meta/v1.{kind}") if kind in META_KINDS else None
    return found or _kinds.get((api_version, kind))
