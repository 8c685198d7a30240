"""Processes outside the runtime: the per-container and per-sandbox monitor
(monitor.py, a standalone script), the runtime-side client that spawns and
talks to it (spawn.py), and the CRI log format (logs.py)."""
