"""The per-layer timing summary `make test` prints at the end of a run.

A layer is the first directory under tests/ (unit, fuzz, integration, linux,
e2e, ...). For each: how many tests ran, the wall time from its first test's
start to its last one's end (layers overlap when the run is parallel), and
the time its tests took in all (setup, call and teardown, summed over the
workers). The hooks run in the process that prints the report: the only
process of a serial run, the controller of a parallel (xdist) one, which
receives every worker's reports.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pytest


@dataclass
class Layer:
    tests: int = 0
    failed: int = 0
    first: float = float("inf")
    last: float = 0.0
    busy: float = 0.0
    slowest: list[tuple[float, str]] = field(default_factory=list)


class LayerTiming:
    def __init__(self) -> None:
        self.layers: dict[str, Layer] = {}
        self.started = time.time()
        self.per_test: dict[str, float] = {}

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        parts = report.nodeid.split("/")
        name = parts[1] if len(parts) > 2 and parts[0] == "tests" else parts[0]
        layer = self.layers.setdefault(name, Layer())
        layer.first = min(layer.first, report.start)
        layer.last = max(layer.last, report.stop)
        layer.busy += report.duration
        self.per_test[report.nodeid] = self.per_test.get(report.nodeid, 0.0) + report.duration
        if report.when == "call" or (report.when == "setup" and not report.passed):
            layer.tests += 1
        if report.failed:
            layer.failed += 1
        if report.when == "teardown":
            layer.slowest.append((self.per_test.pop(report.nodeid, 0.0), report.nodeid))

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.layers:
            return
        tr = terminalreporter
        tr.section("time per layer")
        tr.write_line(f"{'layer':<12} {'tests':>6} {'wall s':>8} {'test s':>9}  slowest test")
        for name, layer in sorted(self.layers.items(), key=lambda kv: kv[1].first):
            wall = max(0.0, layer.last - layer.first)
            top = max(layer.slowest, default=(0.0, ""))
            failed = f" ({layer.failed} failed)" if layer.failed else ""
            tr.write_line(
                f"{name:<12} {layer.tests:>6} {wall:>8.1f} {layer.busy:>9.1f}  "
                f"{top[0]:.1f}s {top[1].split('/', 2)[-1]}{failed}"
            )
        tr.write_line(f"{'session':<12} {'':>6} {time.time() - self.started:>8.1f}")


def register(config: pytest.Config) -> None:
    """Register the summary in the reporting process (not in xdist workers)."""
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(LayerTiming(), "skiff-layer-timing")
