"""Processes outside the runtime: the per-container and per-sandbox monitor
(the monitor/ package, run as a standalone script or forked by its zygote), the runtime-side client that spawns and
talks to it (spawn.py), and the CRI log format (logs.py)."""
