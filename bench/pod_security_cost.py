"""What PodSecurity admission costs per pod create, in process: the CPU time
of one `PodSecurity.validate` (controlplane/apiserver/podsecurity/) for the
pod bench.apiserver and bench.kubeapi create, shaped to meet restricted,

- in a namespace at the cluster default (privileged: the fast path every
  create takes when nothing is configured), and
- with restricted enforced, audited and warned in every namespace (what
  `--pod-security restricted` configures there: one evaluation for all three
  modes).

The end-to-end creates/s of those benches move 10-20% between rounds on
this shared 2-core machine, more than this plugin can cost, so this is the
steady figure to hold against their server CPU per create (bench.kubeapi's
rest_create_cpu_ms). No peer: kube-apiserver does not run here. The last
line is one JSON object of figure -> number.

    .venv/bin/python -m bench.pod_security_cost [--creates 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import time

from bench.pod_security import POD_SHAPE_ENV, pod
from controlplane.apiserver import admission_context
from controlplane.apiserver.admission_context import Attributes
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.podsecurity.config import PodSecurityConfig, parse_configuration
from controlplane.apiserver.podsecurity.plugin import PodSecurity


def _config(level: str | None) -> PodSecurityConfig | None:
    if level is None:
        return None
    defaults = {f"{mode}{suffix}": value for mode in ("enforce", "audit", "warn")
                for suffix, value in (("", level), ("-version", "latest"))}  # fmt: skip
    return parse_configuration({
        "apiVersion": "pod-security.admission.config.k8s.io/v1",
        "kind": "PodSecurityConfiguration",
        "defaults": defaults,
        "exemptions": {},
    }, "bench")  # fmt: skip


def cost_us(level: str | None, creates: int) -> float:
    """CPU microseconds of one validate of a create in namespace `bench`."""
    plugin = PodSecurity(_config(level), namespace=lambda n: {"metadata": {"name": n}})
    obj = pod("p", 1)
    obj["metadata"]["namespace"] = "bench"
    attrs = Attributes("CREATE", "Pod", "bench", "p", "",
                       Identity(user="bench", groups=("system:authenticated",)), obj)  # fmt: skip
    with admission_context.recording():
        plugin.validate(attrs)  # warm
        start = time.process_time()
        for _ in range(creates):
            plugin.validate(attrs)
        return (time.process_time() - start) / creates * 1e6


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--creates", type=int, default=20_000)
    a = ap.parse_args(argv)
    os.environ[POD_SHAPE_ENV] = "restricted"
    figures = {
        "validate_default_us": round(cost_us(None, a.creates), 2),
        "validate_restricted_us": round(cost_us("restricted", a.creates), 2),
    }
    print(f"{'PodSecurity.validate, one pod create':<52}{'CPU us':>10}")
    print(f"{'  namespace at the cluster default (privileged)':<52}"
          f"{figures['validate_default_us']:>10.1f}")  # fmt: skip
    print(f"{'  restricted enforced, audited and warned':<52}"
          f"{figures['validate_restricted_us']:>10.1f}")  # fmt: skip
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
