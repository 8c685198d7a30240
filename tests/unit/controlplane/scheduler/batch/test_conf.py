"""volcano-scheduler.conf: Volcano's shape is read; a bad file is refused naming the line."""

from __future__ import annotations

import pytest

from controlplane.scheduler.batch import builtin, conf
from controlplane.scheduler.batch.scheduler import BatchScheduler
from tests.fakes.volcano_examples import VOLCANO_CI_CONF

from .harness import Cluster

VOLCANO_DEFAULT = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
    arguments:
      binpack.weight: 10
"""


def test_volcano_default_configuration_is_read() -> None:
    c = builtin.load(VOLCANO_DEFAULT)
    assert c.actions == ("enqueue", "allocate", "backfill")
    assert [p.name for p in c.tiers[0]] == ["priority", "gang", "conformance"]
    gang = c.plugin("gang")
    assert (
        gang is not None
        and not gang.enabled("enablePreemptable")
        and gang.enabled("enableJobReady")
    )
    fw = BatchScheduler(c, Cluster()).framework
    assert fw.weights["BinPack"] == 10 and fw.plugin("NodeAffinity") is not None


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ('actions: "enqueue, allocate, shuffle"\n', "line 1", "unknown action 'shuffle'"),
        ('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    enableJobReady: maybe\n',
         "line 5", "enableJobReady must be true or false"),
        ('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    enableWhatever: true\n',
         "line 5", "unknown plugin option 'enableWhatever'"),
        ('actions: "allocate"\nteirs: []\n', "line 2", "unknown key 'teirs'"),
        ('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: gang\n',
         "line 5", "appears twice"),
        ('actions: [allocate\n', "line 2", "invalid YAML"),
    ],
)  # fmt: skip
def test_bad_configuration_is_refused_naming_the_line(text: str, where: str, what: str) -> None:
    with pytest.raises(conf.ConfError) as err:
        builtin.load(text)
    assert str(err.value).startswith(where) and what in str(err.value)


def test_bad_argument_is_refused() -> None:
    c = conf.load(
        'actions: "allocate"\ntiers:\n- plugins:\n  - {name: binpack, arguments: {binpack.weight: -1}}\n'
    )
    with pytest.raises(conf.ConfError, match=r"binpack\.weight"):
        conf.validate(c)


def test_volcano_ci_configuration_loads_unknown_plugins_skipped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Volcano's CI scheduler configuration (the one its e2e suites run
    with) is accepted: sla is built; network-topology-aware is not, and is
    left out with a warning naming its line, as Volcano's OpenSession logs
    "Failed to get plugin" and goes on."""
    c = builtin.load(VOLCANO_CI_CONF)
    assert c.actions == ("enqueue", "allocate", "backfill", "reclaim", "preempt")
    assert [p.name for p in c.tiers[0]] == ["priority", "gang", "conformance", "sla"]
    assert "network-topology-aware" not in [p.name for p in c.tiers[1]]
    assert "line 19: plugin 'network-topology-aware' is not built in" in caplog.text
    BatchScheduler(c, Cluster()).run_session()
