"""Quantity parsing and pod request arithmetic."""

from __future__ import annotations

from fractions import Fraction

import pytest

from controlplane.scheduler import resources
from tests.fakes.scheduler_objects import make_pod


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("500m", Fraction(1, 2)),
        ("2", Fraction(2)),
        ("1Gi", Fraction(2**30)),
        ("128974848", Fraction(128974848)),
        ("129e6", Fraction(129000000)),
        ("123Mi", Fraction(123 * 2**20)),
        ("1.5", Fraction(3, 2)),
        ("0.1", Fraction(1, 10)),
        ("100k", Fraction(100000)),
        ("1E3", Fraction(1000)),
        ("10n", Fraction(1, 10**8)),
        (3, Fraction(3)),
    ],
)
def test_parse_quantity(text: str | int, expected: Fraction) -> None:
    assert resources.parse_quantity(text) == expected


@pytest.mark.parametrize("bad", ["", "1.2.3", "abc", "1Qi", "--1", "1 Gi"])
def test_parse_quantity_rejects(bad: str) -> None:
    with pytest.raises(resources.QuantityError):
        resources.parse_quantity(bad)


def test_milli_and_value_round_up() -> None:
    assert resources.milli_value("0.0001") == 1
    assert resources.milli_value("250m") == 250
    assert resources.value("1.1") == 2
    assert resources.amount("cpu", "2") == 2000
    assert resources.amount("memory", "1Ki") == 1024


def test_pod_requests_counts_init_containers_as_kubernetes() -> None:
    pod = make_pod("p", cpu="100m", memory="100Mi")
    pod["spec"]["containers"].append({"name": "b", "resources": {"requests": {"cpu": "200m"}}})
    pod["spec"]["initContainers"] = [
        {"name": "i1", "resources": {"requests": {"cpu": "1", "memory": "50Mi"}}},
        {"name": "i2", "resources": {"requests": {"memory": "500Mi"}}},
    ]
    req = resources.pod_requests(pod)
    assert req == {"cpu": 1000, "memory": 500 * 2**20}


def test_pod_requests_sidecars_add_up() -> None:
    pod = make_pod("p", cpu="100m")
    pod["spec"]["initContainers"] = [
        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "300m"}}},
        {"name": "init", "resources": {"requests": {"cpu": "500m"}}},
    ]
    pod["spec"]["overhead"] = {"cpu": "50m"}
    # init step: 300 + 500 = 800; steady: 100 + 300 = 400; max 800, + overhead 50.
    assert resources.pod_requests(pod) == {"cpu": 850}


def test_non_zero_defaults() -> None:
    assert resources.non_zero_cpu_memory({}) == (100, 200 * 2**20)
    assert resources.non_zero_cpu_memory({"cpu": 5}) == (5, 200 * 2**20)
