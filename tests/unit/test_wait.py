import itertools

import pytest

from tests.harness.wait import WaitTimeout, wait_for


def test_wait_for_returns_first_truthy_value() -> None:
    counter = itertools.count()
    assert wait_for(lambda: next(counter) >= 3 and "done", timeout=5) == "done"


def test_wait_for_times_out_with_cause() -> None:
    def broken() -> bool:
        raise ValueError("not ready")

    with pytest.raises(WaitTimeout, match="waiting for broken") as info:
        wait_for(broken, timeout=0.05)
    assert isinstance(info.value.__cause__, ValueError)
