"""The queue controller's state machine (Volcano's queue states)."""

from __future__ import annotations

import pytest

from controlplane.controllers.vcqueue import next_state


@pytest.mark.parametrize(
    ("state", "actions", "busy", "after"),
    [
        ("Open", ["CloseQueue"], False, "Closed"),
        ("Open", ["CloseQueue"], True, "Closing"),  # a job still runs
        ("Closing", [], False, "Closed"),  # its last job finished
        ("Closing", [], True, "Closing"),
        ("Closed", [], True, "Closing"),  # written Closed directly while jobs run
        ("Closing", ["OpenQueue"], True, "Open"),
        ("Open", ["CloseQueue", "OpenQueue"], False, "Open"),  # in order, the last wins
        ("Open", [], True, "Open"),
        ("Unknown", [], False, "Unknown"),
    ],
)
def test_next_state(state: str, actions: list[str], busy: bool, after: str) -> None:
    assert next_state(state, actions, busy) == after
