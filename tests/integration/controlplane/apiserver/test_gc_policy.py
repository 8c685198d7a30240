"""The API server sets its process's garbage collector for a server (jsoncodec.tune_gc)."""

from __future__ import annotations

import gc

from controlplane.api import jsoncodec
from tests.harness.apiserver import Cluster


def test_a_started_server_collects_young_objects_less_often(cluster: Cluster) -> None:
    # CPython's default, a young collection every 700 new containers, cost a
    # fifth of the control plane's CPU in bench.volcano's end-to-end run.
    assert cluster.server.config.gc_thresholds == jsoncodec.SERVER_GC_THRESHOLDS
    assert gc.get_threshold() == jsoncodec.SERVER_GC_THRESHOLDS
