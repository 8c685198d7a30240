"""End-to-end tests: real daemons, real pods (root, under the shared lock)."""

import pytest

# The shared checks say what differed when they fail.
pytest.register_assert_rewrite("tests.e2e.netcheck")
