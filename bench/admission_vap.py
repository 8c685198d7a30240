"""What one ValidatingAdmissionPolicy costs a create: REST creates/s (10
clients, one pod per POST, JSON, as bench.kubeapi's creates) with no policy
and with one policy + binding matching every CREATE of every resource
(three CEL validations a real policy would have: a label check, a name
rule and a replicas-style bound), and the server's CPU per create.

`vap(rest)` is the setup bench.kubeapi's `--admission vap` uses (beside the
webhooks part's `none` and `webhook`, bench/admission.py's SETUPS); run
alone this module compares none and vap.
Kubernetes' reference: kube-apiserver evaluates a policy in-process, its
per-request overhead a few percent of a create (no kube-apiserver here to
measure beside).

Prints a table, then as its last line one JSON object.
Usage: python -m bench.admission_vap [--quick]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.admission import RestLike, vap
from bench.kubeapi import control_plane
from bench.rest_client import Rest, rest_creates
from bench.server_cpu import abba


@contextmanager
def none(rest: RestLike) -> Iterator[None]:
    yield


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer requests (smoke run)")
    args = parser.parse_args(argv)
    per_client = 20 if args.quick else 150
    figures: dict[str, float] = {}
    work = Path(tempfile.mkdtemp(prefix="skiff-bench-vap-"))
    try:
        with control_plane(work / "a") as server:
            kubeconfig = server.data_dir / "kubeconfig"
            rest = Rest(str(kubeconfig))
            rest.request("POST", "/api/v1/namespaces", {"metadata": {"name": "bench"}})
            rest_creates(kubeconfig, 10, max(2, per_client // 10))  # warm-up

            def creates(mode: str) -> float:
                with (vap if mode == "vap" else none)(rest):
                    return rest_creates(kubeconfig, 10, per_client)

            rates, cpu = abba(server, "none", "vap", creates)
            for mode in ("none", "vap"):
                figures[f"rest_create_admission_{mode}_per_s"] = round(rates[mode], 1)
                figures[f"rest_create_admission_{mode}_cpu_ms"] = round(
                    1000 * cpu[mode] / (2 * 10 * per_client), 3)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    none_rate = figures["rest_create_admission_none_per_s"]
    vap_rate = figures["rest_create_admission_vap_per_s"]
    figures["vap_overhead_pct"] = round(100 * (none_rate - vap_rate) / none_rate, 1)
    print(f"{'admission':12} {'creates/s':>10} {'server CPU ms/create':>22}")
    for mode in ("none", "vap"):
        print(f"{mode:12} {figures[f'rest_create_admission_{mode}_per_s']:10.1f} "
              f"{figures[f'rest_create_admission_{mode}_cpu_ms']:22.3f}")  # fmt: skip
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
