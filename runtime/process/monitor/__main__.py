"""`python -S -E -B runtime/process/monitor MODE SPEC`: the monitor as a
script (runtime.process.spawn starts it so when no zygote runs)."""

import os
import sys

# run as a directory: its own path is sys.path[0]; put the package root there
sys.path[0] = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
)

from runtime.process.monitor import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
