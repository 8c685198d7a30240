"""ADD and DEL latency of skiff-cni against the reference bridge plugin.

Both run in the same throwaway "node" namespace, interleaved iteration by
iteration (so machine load hits both alike), each with its own bridge,
subnet and IPAM directory: ours as `skiff-cni` + `skiff-ipam` (installed as
fast launchers by `runtime.cni.install`), the reference as Debian's
`bridge` + `host-local`; both with isGateway and ipMasq. Pod namespaces are
made before the timed call and removed after; DEL gets the ADD result as
prevResult, as libcni passes it. Prints a table and, as the
last line, one JSON object of figure -> number.

    sudo .venv/bin/python -m bench.cni [--iterations 40]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.stats import pctl
from runtime.cni import install, oslib

REF_DIR = Path("/usr/lib/cni")


def conf(kind: str, bridge: str, subnet: str, data_dir: str) -> bytes:
    return json.dumps(
        {
            "cniVersion": "1.0.0",
            "name": f"bench-{kind}",
            "type": "skiff-cni" if kind == "ours" else "bridge",
            "bridge": bridge,
            "isGateway": True,
            "ipMasq": True,
            "ipam": {
                "type": "skiff-ipam" if kind == "ours" else "host-local",
                "subnet": subnet,
                "dataDir": data_dir,
                "routes": [{"dst": "0.0.0.0/0"}],
            },
        }
    ).encode()


def run_plugin(
    binary: Path, command: str, cid: str, netns: str, stdin: bytes, path: str
) -> tuple[float, bytes]:
    env = dict(os.environ)
    env.update(
        CNI_COMMAND=command,
        CNI_CONTAINERID=cid,
        CNI_NETNS=netns,
        CNI_IFNAME="eth0",
        CNI_PATH=path,
    )
    start = time.perf_counter()
    proc = subprocess.run([str(binary)], input=stdin, env=env, capture_output=True)
    elapsed = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"{binary} {command} failed: {proc.stdout!r} {proc.stderr!r}")
    return elapsed, proc.stdout


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="skiff-cni vs reference bridge latency")
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument(
        "--python", default=None, help="interpreter for the skiff-cni launcher (default: this one)"
    )
    ns = parser.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("bench/cni.py needs root (network namespaces)")
    if not (REF_DIR / "bridge").exists():
        raise SystemExit(f"reference plugins not found in {REF_DIR}")
    tag = os.urandom(3).hex()
    node = f"skbench-{tag}"
    tmp = Path(tempfile.mkdtemp(prefix="skiff-bench-cni-"))
    bin_dir = tmp / "bin"
    install.install(str(bin_dir), ns.python)
    subprocess.run(["ip", "netns", "add", node], check=True)
    pods: list[str] = []
    samples: dict[str, list[float]] = {
        k: [] for k in ("ours ADD", "ours DEL", "ref ADD", "ref DEL")
    }
    plugins = {
        "ours": (bin_dir / "skiff-cni", f"{bin_dir}:{REF_DIR}"),
        "ref": (REF_DIR / "bridge", str(REF_DIR)),
    }
    confs = {
        "ours": conf("ours", f"skb{tag}", "10.248.0.0/16", str(tmp / "ipam")),
        "ref": conf("ref", f"skr{tag}", "10.247.0.0/16", str(tmp / "ipam")),
    }
    try:
        with oslib.NetNS(f"/run/netns/{node}"):
            subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
            for i in range(ns.iterations + 2):  # two warm-up rounds
                for kind in ("ours", "ref") if i % 2 else ("ref", "ours"):
                    pod = f"skbp-{tag}-{kind}-{i}"
                    subprocess.run(["ip", "netns", "add", pod], check=True)
                    pods.append(pod)
                    binary, path = plugins[kind]
                    cid = f"bench{i}{kind}"
                    netns = f"/run/netns/{pod}"
                    add, out = run_plugin(binary, "ADD", cid, netns, confs[kind], path)
                    # DEL gets prevResult, as libcni passes it for cniVersion >= 0.4.0.
                    del_conf = json.loads(confs[kind])
                    del_conf["prevResult"] = json.loads(out)
                    dele, _ = run_plugin(
                        binary, "DEL", cid, netns, json.dumps(del_conf).encode(), path
                    )
                    if i >= 2:
                        samples[f"{kind} ADD"].append(add)
                        samples[f"{kind} DEL"].append(dele)
                    subprocess.run(["ip", "netns", "del", pod], check=True)
                    pods.remove(pod)
    finally:
        for pod in pods:
            subprocess.run(["ip", "netns", "del", pod], check=False)
        subprocess.run(["ip", "netns", "del", node], check=False)
        shutil.rmtree(tmp, ignore_errors=True)

    figures: dict[str, float] = {}
    print(f"skiff-cni vs reference bridge, {ns.iterations} iterations each (ms)")
    print(f"{'':10}{'ours p50':>10}{'ours p90':>10}{'ref p50':>10}{'ref p90':>10}{'p50 ratio':>11}")
    for cmd in ("ADD", "DEL"):
        o, r = samples[f"ours {cmd}"], samples[f"ref {cmd}"]
        row = {
            "ours_p50": pctl(o, 0.5),
            "ours_p90": pctl(o, 0.9),
            "ref_p50": pctl(r, 0.5),
            "ref_p90": pctl(r, 0.9),
        }
        ratio = row["ours_p50"] / row["ref_p50"]
        print(
            f"{cmd:10}{row['ours_p50']:10.1f}{row['ours_p90']:10.1f}"
            f"{row['ref_p50']:10.1f}{row['ref_p90']:10.1f}{ratio:11.2f}"
        )
        for key, value in row.items():
            figures[f"{cmd.lower()}_{key}_ms"] = round(value, 2)
        figures[f"{cmd.lower()}_p50_ratio"] = round(ratio, 3)
    sys.stdout.flush()
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
