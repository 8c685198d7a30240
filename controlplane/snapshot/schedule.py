"""Scheduled snapshots in the control plane, with retention (k3s' defaults).

With the control plane running, a thread takes a snapshot named
`etcd-snapshot-<node>-<unix seconds>` at each time of
--snapshot-schedule-cron (default every 12 hours: `0 */12 * * *`), then
prunes that name's snapshots down to the newest --snapshot-retention
(default 5). --disable-snapshots turns it off. A failed snapshot is logged
and tried again at the next time; it never stops the control plane.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from controlplane.snapshot import catalog
from controlplane.snapshot.fileformat import SnapshotError

log = logging.getLogger("skiff.snapshot")


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--snapshot-schedule-cron", "--etcd-snapshot-schedule-cron",
        dest="snapshot_schedule_cron", default=catalog.DEFAULT_CRON, metavar="CRON",
        help=f"when to take scheduled snapshots (default {catalog.DEFAULT_CRON!r}: every 12 hours)",
    )  # fmt: skip
    p.add_argument(
        "--snapshot-retention", "--etcd-snapshot-retention",
        dest="snapshot_retention", type=int, default=catalog.DEFAULT_RETENTION, metavar="N",
        help=f"scheduled snapshots to keep (default {catalog.DEFAULT_RETENTION})",
    )  # fmt: skip
    p.add_argument(
        "--snapshot-dir", "--etcd-snapshot-dir", dest="snapshot_dir", default="",
        help="where snapshots go (default <data-dir>/snapshots)",
    )  # fmt: skip
    p.add_argument(
        "--disable-snapshots", "--etcd-disable-snapshots", dest="disable_snapshots",
        action="store_true", help="take no scheduled snapshots",
    )  # fmt: skip


def _schedule(text: str) -> object:
    from controlplane.controllers.cron import Schedule, ScheduleError

    try:
        return Schedule.parse(text)
    except ScheduleError as err:
        raise ValueError(f"--snapshot-schedule-cron {text!r}: {err}") from None


@dataclass
class ScheduledSnapshots:
    """The schedule, with `due(now)` separated from the thread for testing."""

    source: catalog.Source
    directory: Path
    cron: str = catalog.DEFAULT_CRON
    retention: int = catalog.DEFAULT_RETENTION
    node: str = ""

    def __post_init__(self) -> None:
        if self.retention < 1:
            raise ValueError(f"--snapshot-retention {self.retention}: must keep at least one")
        self._schedule = _schedule(self.cron)
        self._next = self._after(time.time())

    def _after(self, now: float) -> float:
        when = datetime.datetime.fromtimestamp(now, datetime.UTC)
        return float(self._schedule.next_after(when).timestamp())  # type: ignore[attr-defined]

    @property
    def next_time(self) -> float:
        return self._next

    def due(self, now: float) -> catalog.Entry | None:
        """Take and prune when the next time has come; the snapshot taken."""
        if now < self._next:
            return None
        self._next = self._after(now)
        try:
            entry = catalog.save(self.source, self.directory, catalog.SCHEDULED, self.node)
            pruned = catalog.prune(self.directory, catalog.SCHEDULED, self.retention)
        except (SnapshotError, OSError) as err:
            log.warning("scheduled snapshot failed: %s", err)
            return None
        log.info("scheduled snapshot %s saved; pruned %s", entry.name, pruned or "none")
        return entry

    def start(
        self, stop: threading.Event, clock: Callable[[], float] = time.time
    ) -> threading.Thread:
        def loop() -> None:
            while not stop.wait(max(0.0, min(60.0, self._next - clock()))):
                self.due(clock())

        thread = threading.Thread(target=loop, name="snapshot-schedule", daemon=True)
        thread.start()
        return thread


def check_flags(args: argparse.Namespace) -> None:
    """Refuse a bad schedule or retention at start (DataDirError, with the flag)."""
    from controlplane.datadir import DataDirError

    try:
        _schedule(args.snapshot_schedule_cron)
    except ValueError as err:
        raise DataDirError(str(err)) from None
    if args.snapshot_retention < 1:
        raise DataDirError(
            f"--snapshot-retention {args.snapshot_retention}: must keep at least one"
        )


def from_args(args: argparse.Namespace, data_dir: Path) -> ScheduledSnapshots | None:
    """The schedule the flags ask for (None: disabled); ValueError for a bad one."""
    if getattr(args, "disable_snapshots", True):
        return None
    endpoints = tuple(e for e in getattr(args, "etcd_endpoints", "").split(",") if e.strip())
    source = catalog.Source(getattr(args, "store", "sqlite"), data_dir, endpoints)
    return ScheduledSnapshots(source, catalog.snapshot_dir(data_dir, args.snapshot_dir),
                              args.snapshot_schedule_cron, args.snapshot_retention)  # fmt: skip
