"""Where Hypothesis keeps what it computes once per machine.

Hypothesis caches two things in its home directory (`.hypothesis` in the
current directory by default), both keyed by their content: the Unicode
tables its text strategies draw from (by Unicode version and codec), and
the literals of every imported module of the tree (by the hash of the
module's source), which it reads with `ast` on the first draw of each
process. A clean clone has neither, so every pytest process that runs a
Hypothesis test computed them again. Kept in a directory of the machine
(`$SKIFF_TEST_HYPOTHESIS_CACHE`, default /var/cache/skiff-test-hypothesis),
they are computed once per machine and per change of a module. Hypothesis
writes each file atomically, so concurrent runs share the directory; where
it cannot write there, it computes them as before.

The example database (the failing inputs Hypothesis replays) stays where it
was, in `.hypothesis/examples` of the current directory (none under the "ci"
profile): it belongs to the checkout's tests. An explicit
HYPOTHESIS_STORAGE_DIRECTORY is left as it is.
"""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import configuration, settings

ENV = "SKIFF_TEST_HYPOTHESIS_CACHE"
DEFAULT = "/var/cache/skiff-test-hypothesis"
PROFILE = "skiff-machine-cache"


def home() -> Path:
    return Path(os.environ.get(ENV) or DEFAULT)


def configure() -> Path | None:
    """Move Hypothesis's home to the machine's cache, the example database
    staying where the active profile has it; the home used, or None where
    HYPOTHESIS_STORAGE_DIRECTORY names one."""
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        return None
    # Read before the move: the default database is found in the home of
    # the moment it is asked for.
    active = settings.default
    assert active is not None  # Hypothesis always has an active profile
    settings.register_profile(PROFILE, parent=active, database=active.database)
    settings.load_profile(PROFILE)
    where = home()
    configuration.set_hypothesis_home_dir(where)
    return where
