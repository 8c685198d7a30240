"""Benchmark of the Kubernetes REST API, beside the gRPC figures of the same run.

Runs `skiff controlplane` as a real process (SQLite, TLS, tokens) as
bench.apiserver does and measures from client processes:

- creates/s with 10 REST clients (one pod per POST, keep-alive HTTPS), with
  JSON bodies and with protobuf bodies (client-go's default for built-in
  kinds: `application/vnd.kubernetes.protobuf`, answered in protobuf), each
  with the server's CPU per create, in --rounds paired rounds after a
  warm-up of each (protobuf compiles its codecs at first use), each round
  both modes in two blocks, mirrored (JSON, protobuf, protobuf, JSON; the
  next round the other way round): the paired protobuf/JSON ratio, its
  spread, how many rounds protobuf was cheaper in, and whether that shows
  protobuf cheaper: the signed-rank test's p, the sign test's beside it
  (bench/paired.py); and the gRPC one-object-per-call figure with 10
  clients, same machine, same run; then the server's CPU per object read,
  JSON beside protobuf, in list pages of 500 and single gets of the pods
  just made. The server's CPU is read to the nanosecond from its threads'
  counts (bench/server_cpu.py), not in 10 ms clock ticks;
- watch delivery p50/p99 with 100 REST watchers (time from just before the
  write is sent to the event line arriving at each watcher), and the same
  with 100 gRPC watchers;
- `kubectl get pods -A` wall time with 10,000 pods stored (kubectl included),
  beside the server's time for the same Table pages asked back to back and
  the least time kubectl's own rate limiter (5/s after a burst of 10) spreads
  its page requests over; and the same command with `--chunk-size=0` (one
  request, so no page waits on the rate limiter);
- a List of 100,000 pods: paged as client-go's pager does (limit=500, every
  continue token) and unpaged (one streamed response), each read as bytes
  (the server's cost) and read and decoded into dicts;
- creates/s with admission (`--admission none,webhook,vap`): the same
  creates with one validating webhook, or one ValidatingAdmissionPolicy,
  matching every create, beside none (bench/admission.py).

Beside the wall times, the control plane's CPU seconds for the watch and
kubectl parts: on a shared, busy machine they move far less than wall times.
Prints a table, then as its last line one JSON object of figure -> number.
With --pod-security LEVEL, PodSecurity enforces that level in every
namespace (see bench.apiserver).
Usage: python -m bench.kubeapi [--pods 100000] [--kubectl-pods 10000] [--quick]
                                [--only creates,admission,watch,kubectl,list]
                                [--admission none,webhook,vap] [--pod-security restricted]
                                [--rounds 16]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench import admission, paired  # noqa: E402
from bench.apiserver import Server, preload_pods, throughput, watch_latency  # noqa: E402
from bench.crowd import Crowd, in_threads, p50_p99_ms, paced  # noqa: E402
from bench.pod_security import add_pod_security_flag, set_pod_security  # noqa: E402
from bench.rest_client import PROTOBUF, Rest, rest_creates  # noqa: E402
from bench.server_cpu import CpuMark, on_cpu  # noqa: E402
from controlplane.api import jsoncodec  # noqa: E402
from controlplane.api.k8sproto import codec  # noqa: E402
from controlplane.api.k8sproto import envelope as k8sproto  # noqa: E402
from tests.harness.kubectl import NEWEST as NEWEST_KUBECTL  # noqa: E402

TARGETS = {
    "rest_watch_p99_ms": 50.0,
    "kubectl_get_pods_A_s": 1.5,
    "rest_list_paged_s": 2.0,
}


def _rest_watch_proc(
    kubeconfig: str, watchers: int, expect: int, ready: Any, _go: Any, out: Any
) -> None:
    latencies: list[float] = []
    lock = threading.Lock()
    opened = []
    for _ in range(watchers):
        rest = Rest(kubeconfig)
        conn = rest.connect(timeout=300)
        conn.request(
            "GET", "/api/v1/namespaces/rwatch/configmaps?watch=true&resourceVersion=1"
            "&timeoutSeconds=600", headers=rest.headers(),
        )  # fmt: skip
        opened.append(conn.getresponse())

    def read(response: Any) -> None:
        mine: list[float] = []
        while len(mine) < expect:
            line = response.readline()
            if not line:
                break
            now = time.time()
            event = json.loads(line)
            if event["type"] != "ADDED":
                continue
            mine.append(now - float(event["object"]["metadata"]["annotations"]["sent"]))
        with lock:
            latencies.extend(mine)

    in_threads(lambda i: read(opened[i]), len(opened), ready, latencies, out, join_timeout=300)
    for r in opened:
        r.close()


def rest_watch_latency(kubeconfig: Path, watchers: int, events: int,
                       rate: float = 50.0) -> tuple[float, float]:  # fmt: skip
    crowd = Crowd(_rest_watch_proc, [(str(kubeconfig), watchers // 2, events)] * 2)
    crowd.start()
    rest = Rest(str(kubeconfig))

    def send(i: int) -> None:
        code, _ = rest.request(
            "POST", "/api/v1/namespaces/rwatch/configmaps",
            {"metadata": {"name": f"w-{i}", "annotations": {"sent": repr(time.time())}}},
        )  # fmt: skip
        assert code == 201

    paced(events, rate, send)
    latencies = crowd.results(300)
    assert len(latencies) == watchers * events, (len(latencies), watchers * events)
    return p50_p99_ms(latencies)


def kubectl_get_all(kubeconfig: Path, expect: int, *flags: str) -> float:
    kubectl = str(NEWEST_KUBECTL)  # by its path: /usr/bin/kubectl picks an older one
    assert NEWEST_KUBECTL.exists(), f"kubectl is not installed at {NEWEST_KUBECTL}"
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(kubeconfig.parent)}
    subprocess.run([kubectl, "get", "ns"], env=env, check=True, capture_output=True)  # warm
    t0 = time.perf_counter()
    done = subprocess.run(
        [kubectl, "get", "pods", "-A", "--no-headers", *flags],
        env=env,
        check=True,
        capture_output=True,
    )
    elapsed = time.perf_counter() - t0
    assert done.stdout.count(b"\n") == expect, done.stdout.count(b"\n")
    return elapsed


TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
# kubectl's own client: --chunk-size 500, and client-go's default rate limit
# (5 requests/s after a burst of 10), which kubectl does not raise for lists.
KUBECTL_CHUNK, KUBECTL_QPS, KUBECTL_BURST = 500, 5.0, 10


def table_pages(kubeconfig: Path, expect: int) -> float:
    """Seconds for the server to answer the Table pages `kubectl get pods -A`
    asks for, one after the other with no client throttling: the server's
    share of the kubectl figure."""
    rest = Rest(str(kubeconfig))
    headers = {**rest.headers(), "Accept": TABLE_ACCEPT}
    t0 = time.perf_counter()
    count, token = 0, ""
    while True:
        path = f"/api/v1/pods?limit={KUBECTL_CHUNK}" + (f"&continue={token}" if token else "")
        rest.conn.request("GET", path, headers=headers)
        response = rest.conn.getresponse()
        body = response.read()
        assert response.status == 200, body[:300]
        token = _continue_of(body)
        count += body.count(b'"cells":')
        if not token:
            break
    elapsed = time.perf_counter() - t0
    assert count == expect, count
    return elapsed


def throttle_floor(pods: int) -> float:
    """The least time kubectl's rate limiter allows between its first and
    last page request: pages beyond the burst wait 1/QPS each."""
    pages = -(-pods // KUBECTL_CHUNK)
    return max(0, pages - KUBECTL_BURST) / KUBECTL_QPS


def _continue_of(body: bytes) -> str:
    """The list's continue token, read from its head (metadata precedes items)."""
    head = body[:1024]
    at = head.find(b'"continue":"')
    if at < 0:
        return ""
    start = at + len(b'"continue":"')
    return head[start : head.index(b'"', start)].decode()


def paged_list(kubeconfig: Path, expect: int) -> dict[str, float]:
    """Seconds to read the list paged by 500 and unpaged: the bytes alone (what
    the server costs), and with every page decoded into dicts (orjson)."""
    rest = Rest(str(kubeconfig))
    figures: dict[str, float] = {}
    for decode in (False, True):
        t0 = time.perf_counter()
        count, token = 0, ""
        while True:
            path = "/api/v1/namespaces/big/pods?limit=500" + (f"&continue={token}" if token else "")
            code, body = rest.request("GET", path)
            assert code == 200, body[:300]
            token = _continue_of(body)
            count += len(jsoncodec.loads(body)["items"]) if decode else body.count(b'"uid":')
            if not token:
                break
        figures["rest_list_paged_decoded_s" if decode else "rest_list_paged_s"] = (
            time.perf_counter() - t0
        )
        assert count == expect, count
        t0 = time.perf_counter()
        code, body = rest.request("GET", "/api/v1/namespaces/big/pods")
        count = len(jsoncodec.loads(body)["items"]) if decode else body.count(b'"uid":')
        figures["rest_list_unpaged_decoded_s" if decode else "rest_list_unpaged_s"] = (
            time.perf_counter() - t0
        )
        assert code == 200 and count == expect, count
    return figures


@contextmanager
def control_plane(work: Path) -> Iterator[Server]:
    (work / "cp").mkdir(parents=True, exist_ok=True)
    server = Server(work / "cp", ["--store", "sqlite"])
    try:
        yield server
    finally:
        server.stop()


PARTS = ("creates", "admission", "watch", "kubectl", "list")
# Paired create rounds: a difference of 3-4% against a round's noise of about
# as much shows in 16 (in 8, one dearer round can hide it).
ROUNDS = 16


def creates(
    server: Server,
    per_client: int,
    figures: dict[str, float],
    rounds: int = ROUNDS,
    blocks: int = 2,
) -> None:
    kubeconfig = server.data_dir / "kubeconfig"
    grpc_rate = throughput(server.conf, "create", 10, per_client)
    for encoding in ("json", "protobuf"):  # the first use of each is not a steady create
        rest_creates(kubeconfig, 10, max(2, per_client // 10), encoding)
    # JSON and protobuf in paired rounds, the order alternating, each mode in
    # `blocks` blocks of the round's creates, mirrored (json, protobuf, protobuf,
    # json: bench/paired.py); the server's CPU counted from the clients' go,
    # not while they connect.
    rates: dict[str, list[float]] = {"json": [], "protobuf": []}
    per_block = max(1, per_client // blocks)

    def cpu_ms(encoding: str) -> float:
        spent: list[float] = []
        rates[encoding].append(rest_creates(kubeconfig, 10, per_block, encoding, server, spent))
        return 1000 * spent[0] / (10 * per_block)

    s = paired.rounds(cpu_ms, "json", "protobuf", rounds, blocks)
    rest_rate, pb_rate = statistics.median(rates["json"]), statistics.median(rates["protobuf"])
    json_ms, pb_ms = s.median(s.a), s.median(s.b)
    figures["grpc_create_10c_per_s"] = round(grpc_rate, 1)
    figures["rest_create_10c_per_s"] = round(rest_rate, 1)
    figures["rest_pb_create_10c_per_s"] = round(pb_rate, 1)
    figures["rest_create_cpu_ms"] = round(json_ms, 3)
    figures["rest_pb_create_cpu_ms"] = round(pb_ms, 3)
    figures["rest_create_cpu_ms_spread"] = round(s.spread(s.a), 3)
    figures["rest_pb_create_cpu_ms_spread"] = round(s.spread(s.b), 3)
    figures["rest_pb_create_cpu_ratio"] = round(s.ratio, 3)  # protobuf / JSON, paired by round
    figures["rest_pb_create_cpu_ratio_spread"] = round(s.ratio_spread, 3)
    figures["rest_create_rounds"] = rounds
    figures["rest_pb_create_cheaper_rounds"] = s.b_cheaper_rounds
    figures["rest_pb_create_sign_p"] = round(s.sign_p, 4)
    figures["rest_pb_create_signed_rank_p"] = round(s.signed_rank_p, 4)
    print(f"  creates, one pod per call, 10 clients, {rounds} paired rounds of {blocks} blocks "
          f"of {10 * per_block} creates per mode (medians): REST JSON "
          f"{rest_rate:8.1f}/s ({json_ms:.3f} ms server CPU each, spread {s.spread(s.a):.3f})   "
          f"REST protobuf {pb_rate:8.1f}/s ({pb_ms:.3f} ms, spread {s.spread(s.b):.3f})   "
          f"gRPC {grpc_rate:8.1f}/s", flush=True)  # fmt: skip
    print(
        f"  protobuf / JSON server CPU per create, paired by round: {s.ratio:.3f} "
        f"(spread {s.ratio_spread:.3f}: rounds "
        f"{', '.join(f'{r:.3f}' for r in s.ratios)}); protobuf cheaper in "
        f"{s.b_cheaper_rounds} of {len(s.ratios)} rounds (signed-rank test p "
        f"{s.signed_rank_p:.4f}, sign test p {s.sign_p:.3f}): protobuf "
        f"{'is' if s.b_cheaper() else 'not shown'} cheaper (signed-rank p below "
        f"{paired.SIGNIFICANCE})",
        flush=True,
    )


def _read(rest: Rest, path: str, accept: str) -> tuple[int, str]:
    """GET path on the keep-alive connection: the objects read and the
    list's continue token (the client's parsing is no server CPU)."""
    rest.conn.request("GET", path, None, {**rest.headers(), "Accept": accept})
    response = rest.conn.getresponse()
    body = response.read()
    assert response.status == 200, body[:300]
    assert response.getheader("Content-Type", "").startswith(accept.split(",")[0]), accept
    if not accept.startswith(PROTOBUF):
        return body.count(b'"uid":'), _continue_of(body)
    _, kind, raw = k8sproto.unwrap(body)
    if not kind.endswith("List"):
        return 1, ""
    count, token, pos = 0, "", 0
    while pos < len(raw):  # List {metadata = 1 ListMeta {continue = 3}, items = 2}
        key, pos = codec._varint(raw, pos, len(raw))
        stop = codec._skip(raw, pos, len(raw), key)
        if key == 0x0A:
            found = codec.fields_of(raw, stop - codec._varint(raw, pos, stop)[0], stop).get(3)
            token = raw[found[0] : found[1]].decode() if isinstance(found, tuple) else ""
        count += key == 0x12
        pos = stop
    return count, token


def _pages(rest: Rest, accept: str) -> int:
    """Every page of 500 of the bench namespace's pods: the objects read."""
    count, token = 0, ""
    while True:
        path = "/api/v1/namespaces/bench/pods?limit=500" + (f"&continue={token}" if token else "")
        read, token = _read(rest, path, accept)
        count += read
        if not token:
            return count


def reads(server: Server, figures: dict[str, float], pages: int = 8, gets: int = 400) -> None:
    """Server CPU per object read, JSON beside protobuf, of the pods the creates
    left: list pages of 500 and single gets, one client, passes alternated
    twice after a first pass of each (stored versions encoded once for protobuf)."""
    rest = Rest(str(server.data_dir / "kubeconfig"))
    accepts = {"json": "application/json", "protobuf": f"{PROTOBUF}, application/json"}
    for encoding, prefix in (("json", "rest_"), ("protobuf", "rest_pb_")):  # every page once
        mark = CpuMark(server.proc.pid)
        count = _pages(rest, accepts[encoding])
        figures[f"{prefix}list_first_cpu_us"] = round(1e6 * mark.seconds() / count, 1)
    code, body = rest.request("GET", "/api/v1/namespaces/bench/pods?limit=500")
    assert code == 200, body[:300]
    names = [item["metadata"]["name"] for item in json.loads(body)["items"]]
    lists = ["/api/v1/namespaces/bench/pods?limit=500"] * pages
    singles = [f"/api/v1/namespaces/bench/pods/{names[i % len(names)]}" for i in range(gets)]
    for what, paths in (("list", lists), ("get", singles)):
        cpu: dict[str, float] = {"json": 0.0, "protobuf": 0.0}
        read: dict[str, int] = {"json": 0, "protobuf": 0}
        for encoding in ("json", "protobuf", "protobuf", "json"):
            mark = CpuMark(server.proc.pid)
            read[encoding] += sum(_read(rest, path, accepts[encoding])[0] for path in paths)
            cpu[encoding] += mark.seconds()
        figures[f"rest_{what}_cpu_us"] = round(1e6 * cpu["json"] / read["json"], 1)
        figures[f"rest_pb_{what}_cpu_us"] = round(1e6 * cpu["protobuf"] / read["protobuf"], 1)
    print(f"  reads, server CPU per object (us): list pages of 500 JSON "
          f"{figures['rest_list_cpu_us']:.1f} protobuf {figures['rest_pb_list_cpu_us']:.1f} "
          f"(first pass over every page {figures['rest_list_first_cpu_us']:.1f} / "
          f"{figures['rest_pb_list_first_cpu_us']:.1f});  gets JSON {figures['rest_get_cpu_us']:.1f} "
          f"protobuf {figures['rest_pb_get_cpu_us']:.1f}", flush=True)  # fmt: skip


def admission_creates(
    server: Server, rest: Rest, modes: list[str], per_client: int, figures: dict[str, float]
) -> None:
    """REST JSON creates/s with each admission setup (bench/admission.py) in force."""
    kubeconfig = server.data_dir / "kubeconfig"
    rest_creates(kubeconfig, 10, max(2, per_client // 10))  # warm-up
    shown = []
    for mode in modes:
        with admission.SETUPS[mode](rest):
            rate, cpu_s = on_cpu(server, lambda: rest_creates(kubeconfig, 10, per_client))
            cpu_ms = 1000 * cpu_s / (10 * per_client)
        figures[f"rest_create_admission_{mode}_per_s"] = round(rate, 1)
        figures[f"rest_create_admission_{mode}_cpu_ms"] = round(cpu_ms, 3)
        shown.append(f"{mode} {rate:8.1f}/s ({cpu_ms:.3f} ms server CPU each)")
    print("  creates with admission, 10 clients, JSON: " + "   ".join(shown), flush=True)


def watches(server: Server, events: int, figures: dict[str, float]) -> None:
    kubeconfig = server.data_dir / "kubeconfig"
    (p50, p99), rest_cpu = on_cpu(server, lambda: rest_watch_latency(kubeconfig, 100, events))
    figures["rest_watch_p50_ms"] = round(p50, 2)
    figures["rest_watch_p99_ms"] = round(p99, 2)
    (g50, g99), grpc_cpu = on_cpu(server, lambda: watch_latency(server.conf, 100, events))
    figures["grpc_watch_p50_ms"] = round(g50, 2)
    figures["grpc_watch_p99_ms"] = round(g99, 2)
    figures["rest_watch_server_cpu_s"] = round(rest_cpu, 3)
    figures["grpc_watch_server_cpu_s"] = round(grpc_cpu, 3)
    print(f"  watch delivery, 100 watchers: REST p50 {p50:.1f} ms  p99 {p99:.1f} ms "
          f"(server CPU {rest_cpu:.2f} s);  gRPC p50 {g50:.1f} ms  p99 {g99:.1f} ms "
          f"(server CPU {grpc_cpu:.2f} s)", flush=True)  # fmt: skip


def kubectl_figures(server: Server, pods: int, figures: dict[str, float]) -> None:
    kubeconfig = server.data_dir / "kubeconfig"
    seconds, server_cpu = on_cpu(server, lambda: kubectl_get_all(kubeconfig, pods))
    server_wall = table_pages(kubeconfig, pods)
    floor = throttle_floor(pods)
    # One request for the whole Table: no page waits on the rate limiter.
    unchunked = kubectl_get_all(kubeconfig, pods, "--chunk-size=0")
    figures["kubectl_get_pods_A_s"] = round(seconds, 3)
    figures["kubectl_get_pods_A_chunk0_s"] = round(unchunked, 3)
    figures["kubectl_server_cpu_s"] = round(server_cpu, 3)
    figures["kubectl_table_pages_server_s"] = round(server_wall, 3)
    figures["kubectl_throttle_floor_s"] = round(floor, 3)
    print(f"  kubectl get pods -A, {pods} pods: {seconds:.2f} s (server-side Tables, "
          f"server CPU {server_cpu:.2f} s); the server answers its "
          f"{-(-pods // KUBECTL_CHUNK)} pages back to back in {server_wall:.2f} s; kubectl's "
          f"rate limiter alone spreads them over {floor:.2f} s", flush=True)  # fmt: skip
    print(f"  kubectl get pods -A --chunk-size=0 (one request): {unchunked:.2f} s", flush=True)


def list_figures(server: Server, pods: int, figures: dict[str, float]) -> None:
    lists = paged_list(server.data_dir / "kubeconfig", pods)
    figures.update({k: round(v, 3) for k, v in lists.items()})
    print(f"  List of {pods} pods: paged by 500 {lists['rest_list_paged_s']:.2f} s "
          f"({lists['rest_list_paged_decoded_s']:.2f} s decoded), one streamed "
          f"response {lists['rest_list_unpaged_s']:.2f} s "
          f"({lists['rest_list_unpaged_decoded_s']:.2f} s decoded)", flush=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--kubectl-pods", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="fewer requests (smoke run)")
    parser.add_argument(
        "--only", default=",".join(PARTS),
        help=f"comma-separated parts to run, of {','.join(PARTS)} (default: all)",
    )  # fmt: skip
    parser.add_argument(
        "--admission", default="none,webhook",
        help="the admission setups the `admission` part compares, comma-separated, of "
             f"{','.join(admission.SETUPS)} (default: none,webhook)",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, default=0,
                        help=f"paired JSON/protobuf create rounds (default {ROUNDS}, --quick 2; "
                             "in 4 the tests' p is never below 0.0625)")  # fmt: skip
    add_pod_security_flag(parser)
    args = parser.parse_args(argv)
    modes = args.admission.split(",")
    if not set(modes) <= set(admission.SETUPS):
        parser.error(
            f"--admission: unknown setup(s) {','.join(sorted(set(modes) - set(admission.SETUPS)))}"
        )
    set_pod_security(args.pod_security, args.pod_shape)
    only = set(args.only.split(","))
    if not only <= set(PARTS):
        parser.error(f"--only: unknown part(s) {','.join(sorted(only - set(PARTS)))}")
    per_client = 20 if args.quick else 150
    events = 50 if args.quick else 200
    figures: dict[str, float] = {}
    work = Path(tempfile.mkdtemp(prefix="skiff-bench-kubeapi-"))
    try:
        with control_plane(work / "a") as server:
            kubeconfig = server.data_dir / "kubeconfig"
            rest = Rest(str(kubeconfig))
            for ns in ("bench", "watch", "rwatch"):
                rest.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
            if "creates" in only:
                creates(server, per_client, figures, args.rounds or (2 if args.quick else ROUNDS))
                reads(server, figures)
            if "admission" in only:
                admission_creates(server, rest, modes, per_client, figures)
            if "watch" in only:
                watches(server, events, figures)
        if "kubectl" in only:
            (work / "b" / "cp").mkdir(parents=True)
            preload_pods("sqlite", work / "b" / "cp", "", "", args.kubectl_pods)
            with control_plane(work / "b") as server:
                kubectl_figures(server, args.kubectl_pods, figures)
        if "list" in only:
            (work / "c" / "cp").mkdir(parents=True)
            preload_pods("sqlite", work / "c" / "cp", "", "", args.pods)
            with control_plane(work / "c") as server:
                list_figures(server, args.pods, figures)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(f"{'figure':32} {'value':>12} {'target':>10}")
    for key, value in figures.items():
        target = TARGETS.get(key)
        if key == "rest_create_10c_per_s" and "grpc_create_10c_per_s" in figures:
            target = figures["grpc_create_10c_per_s"]
        if key == "rest_pb_create_cpu_ms" and "rest_create_cpu_ms" in figures:
            target = figures["rest_create_cpu_ms"]  # protobuf must cost less than JSON
        if key == "rest_pb_create_signed_rank_p":
            target = paired.SIGNIFICANCE  # protobuf cheaper, by more than chance gives
        for what in ("list", "get"):
            if key == f"rest_pb_{what}_cpu_us" and f"rest_{what}_cpu_us" in figures:
                target = figures[f"rest_{what}_cpu_us"]
        mark = "" if target is None else f"{target:10.2f}"
        print(f"{key:32} {value:12.2f} {mark}")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
