"""machinery.metrics writes what prometheus_client wrote before it (issue 27):
the same metrics built in both libraries render to the same bytes.
prometheus_client is a test dependency only: no shipped process imports it
(tests/unit/test_rest_imports.py). The HTTP server: tests/integration/test_metrics_server.py."""

from __future__ import annotations

import math
import platform
from collections.abc import Callable, Iterator
from typing import Any

import prometheus_client as prom
import pytest
from prometheus_client.core import CounterMetricFamily as PromCounterFamily
from prometheus_client.core import GaugeMetricFamily as PromGaugeFamily
from prometheus_client.parser import text_string_to_metric_families

from machinery import metrics
from machinery.metrics import CounterMetricFamily, GaugeMetricFamily

# Label values that need escaping, values that need Go's exponent, +Inf, NaN.
ODD = ['a"b', "back\\slash", "new\nline", "ünïcode", ""]
VALUES = [0, 1, 2.5, -3.25, 1234567.0, 1e7, 1e-7, 123456.5, 1e16, 1e22, math.inf, -math.inf]


def _drive(lib: Any, registry: Any) -> None:
    """The same metrics and observations, in either library."""
    counter = lib.Counter("things_total", "Things done.\nSecond \\ line.", ["kind", "code"],
                          registry=registry)  # fmt: skip
    plain = lib.Counter("plain_events", "A counter without labels.", registry=registry)
    gauge = lib.Gauge("level", "A gauge.", ["where"], registry=registry)
    single = lib.Gauge("single", "A gauge without labels.", registry=registry)
    hist = lib.Histogram("latency_seconds", "A histogram.", ["verb", "zone"],
                         buckets=metrics.REQUEST_BUCKETS, registry=registry)  # fmt: skip
    exp = lib.Histogram("tiny_seconds", "Workqueue buckets.",
                        buckets=metrics.WORKQUEUE_BUCKETS, registry=registry)  # fmt: skip
    for i, odd in enumerate(ODD):
        counter.labels(odd, 200 + i).inc(i + 0.5)
        gauge.labels(odd).set(VALUES[i])
        hist.labels("GET", odd).observe(0.01 * i)
    counter.labels("unused", "500")
    plain.inc(3)
    single.set(1234567.0)
    gauge.labels("up").inc(2)
    gauge.labels("up").dec(0.5)
    for v in (0.0, 1e-9, 5e-8, 0.3, 1.0, 99.0, 1e9):
        exp.observe(v)
        hist.labels("PUT", "z").observe(v)


class _Families:
    def __init__(self, make: Callable[..., Any], counter: Callable[..., Any]) -> None:
        self.make, self.counter = make, counter

    def collect(self) -> Iterator[Any]:
        g = self.make("family_gauge", "Family gauge.", labels=["a", "b"])
        for i, v in enumerate(VALUES):
            g.add_metric([ODD[i % len(ODD)], str(i)], v)
        yield g
        c = self.counter("family_seconds_total", "Family counter.", labels=["container"])
        c.add_metric(["x"], 12.5)
        yield c
        yield self.make("valued", "A gauge made with its value.", value=7)
        yield self.counter("valued_count", "A counter made with its value.", value=2)


def test_render_is_byte_for_byte_prometheus_clients() -> None:
    prom.disable_created_metrics()
    try:
        theirs = prom.CollectorRegistry()
        _drive(prom, theirs)
        theirs.register(_Families(PromGaugeFamily, PromCounterFamily))
        ours = metrics.Registry()
        _drive(metrics, ours)
        ours.register(_Families(GaugeMetricFamily, CounterMetricFamily))
        expected = prom.generate_latest(theirs)
    finally:
        prom.enable_created_metrics()
    assert metrics.render(ours).decode() == expected.decode()
    assert metrics.render(ours) == expected


@pytest.mark.parametrize("value", [*VALUES, math.nan, 0.1, 1e6, 999999.9, 1e21, 5e-324])
def test_values_are_written_as_go_writes_them(value: float) -> None:
    from prometheus_client.utils import floatToGoString

    assert metrics.go_float(value) == floatToGoString(value)


def test_process_and_python_series_are_prometheus_clients() -> None:
    """Same families, labels and types; values read from the same /proc."""
    theirs = prom.CollectorRegistry()
    prom.ProcessCollector(registry=theirs)
    prom.PlatformCollector(registry=theirs)
    prom.GCCollector(registry=theirs)
    parse = text_string_to_metric_families
    ours = {f.name: f for f in parse(metrics.render(metrics.registry()).decode())}
    expected = {f.name: f for f in parse(prom.generate_latest(theirs).decode())}
    assert list(ours) == [n for n in expected if not n.endswith("_created")]
    for name, family in expected.items():
        if name.endswith("_created"):
            continue
        assert ours[name].type == family.type, name
        assert ours[name].documentation == family.documentation, name
        assert [s.labels for s in ours[name].samples] == [s.labels for s in family.samples]
    info = ours["python_info"].samples[0].labels
    assert info["version"] == platform.python_version()
    assert info["implementation"] == platform.python_implementation()
    for name in ("process_max_fds", "process_start_time_seconds"):
        assert ours[name].samples[0].value == expected[name].samples[0].value, name
    assert (
        abs(
            ours["process_open_fds"].samples[0].value
            - expected["process_open_fds"].samples[0].value
        )
        <= 2
    )


def test_misuse_is_refused_as_before() -> None:
    found = metrics.Registry()
    c = metrics.Counter("x_total", "x", ["a"], registry=found)
    with pytest.raises(ValueError):
        metrics.Counter("x", "again", registry=found)
    with pytest.raises(ValueError):
        c.labels("a", "b")
    with pytest.raises(ValueError):
        c.inc()
    with pytest.raises(ValueError):
        c.labels("a").inc(-1)
    with pytest.raises(ValueError):
        metrics.Counter("y", "no labels").labels("a")
    with pytest.raises(ValueError):
        metrics.Histogram("h", "h", buckets=[2.0, 1.0])
    with pytest.raises(ValueError):
        metrics.Histogram("h", "h", ["le"])
