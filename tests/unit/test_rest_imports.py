"""What `skiff up`'s processes import at start costs memory at rest (issue 27
item 8): modules used only by work that comes later (an HTTP probe or hook,
an image pull) are imported when that work comes, not at start."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# (what a process does at start, modules it must not load with it).
CASES = [
    (  # every component's /metrics: machinery.metrics, not prometheus_client
        # (some 80 modules, ~5 MB a process), which tests use to parse it
        "import runtime.main, runtime.server, agent.main, agent.up, controlplane.main\n"
        "import controlplane.scheduler.batch.metrics, controlplane.controllers.metrics\n"
        "import machinery.metrics\n"
        "machinery.metrics.render(machinery.metrics.registry())",
        ["prometheus_client"],
    ),
    (  # the runtime's images: the registry client and the layer unpacker
        # (tarfile, zstandard, zlib-ng, ~1.4 MB) wait for the first PullImage
        "import tempfile, pathlib, runtime.server\n"
        "from runtime.image import build\n"
        "with tempfile.TemporaryDirectory() as d:\n"
        "    build(pathlib.Path(d), None, False)",
        [
            "runtime.image.pull",
            "runtime.image.registry",
            "runtime.image.unpack",
            "runtime.image.decompress",
            "zstandard",
            "zlib_ng",
            "tarfile",
        ],
    ),
    (  # the control plane: the CEL engine (cel-cpp, ~19 MB) waits for the first
        # ValidatingAdmissionPolicy, CRD rule or webhook matchCondition
        "import controlplane.main, controlplane.apiserver.server",
        ["cel_expr_python", "controlplane.api.cel.engine", "controlplane.api.cel.library"],
    ),
    (  # the control plane: the OpenAPI documents and the model they are built from
        # (every nested type of the built-in kinds) wait for the first request of one
        "import controlplane.main, controlplane.apiserver.server\n"
        "from controlplane.api import openapi",
        [
            "controlplane.api.openapi_doc",
            "controlplane.api.openapi_served",
            "controlplane.api.openapi_model",
            "controlplane.api.openapi_texts",
        ],
    ),
    (  # both schedulers, configured by default: NumPy (~12 MB), their caches and
        # plugins wait for the first Pod or PodGroup (controlplane/scheduler/wake.py)
        "import controlplane.main\n"
        "from controlplane.scheduler import run as scheduler\n"
        "from controlplane.scheduler.batch import run as batch\n"
        "scheduler.checked(None), batch.load_conf(None)\n"
        "scheduler.component(), batch.component()",
        [
            "numpy",
            "controlplane.scheduler.scheduler",
            "controlplane.scheduler.batch.scheduler",
            "controlplane.scheduler.framework",
            "controlplane.scheduler.batch.builtin",
        ],
    ),
    (  # `skiff up`'s own process: every certificate, key and signing request is
        # made in a short-lived child (machinery.inchild), dates and names read from
        # the DER: cryptography (~9 MB) is never loaded by its modules
        # (tests/e2e/agent/test_up_rest_crypto.py checks a running skiff up)
        "import agent.up, agent.main, controlplane.main, controlplane.apiserver.server\n"
        "import controlplane.controllers.manager, controlplane.scheduler.run\n"
        "import controlplane.scheduler.batch.run, controlplane.client.secureserving",
        ["cryptography"],
    ),
]


@pytest.mark.parametrize(("start", "absent"), CASES)
def test_start_leaves_later_work_unloaded(start: str, absent: list[str]) -> None:
    code = (
        f"import sys, json\n{start}\nprint(json.dumps([m for m in {absent!r} if m in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
