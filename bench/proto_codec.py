"""Micro-benchmark of the REST wire codecs: the server's CPU per object, JSON beside protobuf.

For a Pod (bench.kubeapi's), a ConfigMap and a Deployment, each first
created through a real Registry (SQLite in a temporary directory) so the
stored objects are the server's (defaults, uid, timestamps, managedFields),
it times what the REST layer does per request in each serialization:

- decode: a create's request body to the object the registry takes (JSON:
  the size and nesting checks, orjson, the decoded-depth check, the check
  for repeated keys (fieldValidation other than Ignore) and the
  field check objects.create runs on JSON bodies only; protobuf: the size
  check and the compiled decoder);
- create: the answer to a create (JSON: the stored bytes with the
  resourceVersion written in; protobuf: the object the registry filled in,
  as its message in the `k8s\\x00` envelope, a new version of a shape seen
  before); create_cold: the same with nothing cached (a shape never seen);
- get: the answer to a get of a stored version already encoded (by its
  create, an earlier get, list or watch); get_cold: with nothing cached;
- list, list_cold: a List of 100 stored objects (lists.py's body), per item;
- watch: one watch event's frame or line (built once for every watcher).

A create costs decode + create; a JSON answer is the stored bytes whatever
was cached. Each figure is process CPU time per object (time.process_time,
which other load on a shared machine stretches far less than wall time),
the median of --rounds rounds, JSON and protobuf sampled in turn in each.

These are a tight loop's figures, caches warm: they rank the codecs' code,
not what a create costs the server. The same steps timed by thread CPU in a
running server (bench.kubeapi's creates, 10 clients) cost 3.5-6 times as
much, the protobuf ones the most: per Pod create, the protobuf body's decode
about 22 us (3.9 here) and its answer about 37 us (7.4 here), JSON's decode
with its field check about 44 us (12.3 here); judge a change to the create
path by bench.kubeapi's server CPU per create.
Prints a table, then as its last line one JSON object of figure ->
microseconds.
Usage: python -m bench.proto_codec [--rounds 7] [--quick]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.pod_security import pod  # noqa: E402
from controlplane.api import jsoncodec, limits, openapi  # noqa: E402
from controlplane.api.k8sproto import envelope  # noqa: E402
from controlplane.api.k8sproto import stored as pbstored  # noqa: E402
from controlplane.apiserver.admission import default_admission  # noqa: E402
from controlplane.apiserver.codec import with_version  # noqa: E402
from controlplane.apiserver.registry import Registry  # noqa: E402
from controlplane.apiserver.rest import body  # noqa: E402
from controlplane.storage.sqlite import SqliteStore  # noqa: E402

LIST_SIZE = 100
FIGURES = ("decode", "create_cold", "create", "get_cold", "get", "list_cold", "list", "watch")
PB = envelope.MEDIA_TYPE


def configmap(name: str, i: int = 0) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"app": "bench"}},
            "data": {"mode": "bench", "index": str(i), "config.yaml": "a: 1\nb: [x, y]\n" * 8}}  # fmt: skip


def deployment(name: str, i: int = 0) -> dict[str, Any]:
    template = pod(name, i)
    del template["apiVersion"], template["kind"], template["metadata"]["name"]
    template["metadata"]["labels"] = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": {"app": "bench"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}},
                     "template": template}}  # fmt: skip


KINDS: dict[str, tuple[str, str, str, Callable[[str, int], dict[str, Any]]]] = {
    "pod": ("Pod", "v1", "Pod", pod),
    "configmap": ("ConfigMap", "v1", "ConfigMap", configmap),
    "deployment": ("Deployment", "apps/v1", "Deployment", deployment),
}


def _sample(fn: Callable[[], object], count: int) -> float:
    """Process CPU microseconds per object of `fn` (handling `count` objects a
    call), over at least 50 ms of calls."""
    calls = 0
    start = time.process_time()
    while True:
        fn()
        calls += 1
        spent = time.process_time() - start
        if spent > 0.05 and calls >= 3:
            return 1e6 * spent / (calls * count)


def pair(
    json_fn: Callable[[], object], pb_fn: Callable[[], object], count: int, rounds: int
) -> tuple[float, float]:
    """Medians over `rounds` of JSON's and protobuf's CPU per object, the two
    sampled in turn in each round so that drift of a shared machine falls
    on both alike."""
    json_us, pb_us = [], []
    for i in range(rounds):
        first, second = (json_fn, pb_fn) if i % 2 == 0 else (pb_fn, json_fn)
        a, b = _sample(first, count), _sample(second, count)
        json_us.append(a if i % 2 == 0 else b)
        pb_us.append(b if i % 2 == 0 else a)
    return statistics.median(json_us), statistics.median(pb_us)


def measure(registry: Registry, name: str, rounds: int) -> dict[str, float]:
    kind, api_version, message_kind, make = KINDS[name]
    request = make(f"{name}-req", 0)
    json_body = jsoncodec.dumps(request)
    pb_body = envelope.encode(request)

    def decode_json() -> (
        object
    ):  # body.read's check, the decode as intake.py runs it, the field check
        limits.check_body(json_body)
        doc = body.decode_noting_repeats(json_body, "application/json")[0]  # repeated keys too
        openapi.validate(doc)  # fields.Write.check: JSON bodies only (protobuf's are typed)
        return doc

    def decode_pb() -> object:
        limits.check_size(len(pb_body))
        return body.decode(pb_body, PB)

    stored = [registry.create(kind, make(f"{name}-{i}", i), "bench") for i in range(LIST_SIZE)]
    data, rev = stored[0]
    created = jsoncodec.loads(data)  # the dict the registry filled in, as respond.py has it
    created["metadata"]["resourceVersion"] = str(rev)
    meta = {"resourceVersion": str(rev)}

    def get_json() -> bytes:  # respond.served: the stored bytes, the resourceVersion in
        return with_version(data, rev)

    def get_pb() -> bytes:
        return pbstored.document(data, rev, api_version, message_kind)

    def list_json() -> bytes:  # lists._items (its head and tail aside)
        return b",".join([with_version(d, r) for d, r in stored])

    def list_pb() -> bytes:
        return pbstored.list_document(stored, meta, api_version, message_kind)

    def watch_json() -> bytes:  # watch._line, once per event for every watcher
        return b'{"type":"%s","object":%s}\n' % (b"ADDED", with_version(data, rev))

    def watch_pb() -> bytes:  # watch._frame
        return pbstored.watch_frame("ADDED", data, rev, api_version, message_kind)

    def create_pb() -> bytes:  # a new version: not cached yet
        pbstored.forget_answers()
        return pbstored.document(data, rev, api_version, message_kind, created)

    def cold(fn: Callable[[], bytes]) -> Callable[[], bytes]:
        def run() -> bytes:
            pbstored.clear()  # nothing cached: neither the answer nor its parts
            return fn()

        return run

    figures: list[tuple[str, Callable[[], object], Callable[[], object], int]] = [
        ("decode", decode_json, decode_pb, 1),
        ("create_cold", get_json, cold(create_pb), 1),
        ("create", get_json, create_pb, 1),
        ("get_cold", get_json, cold(get_pb), 1),
        ("get", get_json, get_pb, 1),
        ("list_cold", list_json, cold(list_pb), LIST_SIZE),
        ("list", list_json, list_pb, LIST_SIZE),
        ("watch", watch_json, watch_pb, 1),
    ]
    out: dict[str, float] = {}
    for figure, json_fn, pb_fn, count in figures:
        pb_fn()  # compiled at first use, then measured
        json_us, pb_us = pair(json_fn, pb_fn, count, rounds)
        out[f"{name}_{figure}_json_us"] = round(json_us, 2)
        out[f"{name}_{figure}_pb_us"] = round(pb_us, 2)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 rounds (smoke run)")
    parser.add_argument(
        "--kinds", default=",".join(KINDS), help="comma-separated, of " + ",".join(KINDS)
    )
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else args.rounds
    names = args.kinds.split(",")
    if not set(names) <= set(KINDS):
        parser.error(f"--kinds: unknown kind(s) {','.join(sorted(set(names) - set(KINDS)))}")
    work = Path(tempfile.mkdtemp(prefix="skiff-bench-proto-"))
    figures: dict[str, float] = {}
    try:
        store = SqliteStore(work / "state.db")
        registry = Registry(store, admission=default_admission())
        registry.create("Namespace", {"metadata": {"name": "bench"}})
        registry.create("ServiceAccount", {"metadata": {"name": "default", "namespace": "bench"}})
        for name in names:
            figures.update(measure(registry, name, rounds))
        store.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"process CPU per object, median of {rounds} rounds (us); lists of {LIST_SIZE}")
    print(f"{'kind':12} {'figure':12} {'JSON':>9} {'protobuf':>9} {'pb/JSON':>8}")
    for name in names:
        for figure in FIGURES:
            j, p = figures[f"{name}_{figure}_json_us"], figures[f"{name}_{figure}_pb_us"]
            print(f"{name:12} {figure:12} {j:9.2f} {p:9.2f} {p / j:8.2f}")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
