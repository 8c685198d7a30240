"""Five-field cron schedules and the CronJob's "what to run now" decision (pure).

`Schedule.parse()` reads standard cron (minute hour day-of-month month
day-of-week) with `*`, ranges `a-b`, steps `*/n` and `a-b/n`, lists `a,b`,
month and weekday names (JAN..DEC, SUN..SAT; 7 is Sunday too), and the
macros @yearly/@annually, @monthly, @weekly, @daily/@midnight, @hourly. As in
Vixie cron, when both day-of-month and day-of-week are restricted a day
matches if either does. Times are UTC (or the fixed `CRON_TZ=`/`TZ=` prefix
is refused). `next_after()` finds the next fire time; `plan_cronjob()`
applies Kubernetes' rules: the most recent unmet schedule since the last
schedule (or creation), bounded by startingDeadlineSeconds, at most 100
missed starts, and the concurrencyPolicy (Allow, Forbid, Replace). No I/O.
"""

from __future__ import annotations

import calendar
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

MAX_MISSED = 100

_MONTHS = {m.upper(): i for i, m in enumerate(calendar.month_abbr) if m}
_DAYS = {"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}
_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


class ScheduleError(ValueError):
    """A schedule that does not parse; the message names the bad field."""


def _value(text: str, names: Mapping[str, int], lo: int, hi: int, field: str) -> int:
    upper = text.upper()
    if upper in names:
        return names[upper]
    try:
        n = int(text)
    except ValueError:
        raise ScheduleError(f"{field}: {text!r} is not a number or name") from None
    if not lo <= n <= hi:
        raise ScheduleError(f"{field}: {n} out of range {lo}-{hi}")
    return n


def _field(
    text: str, lo: int, hi: int, field: str, names: Mapping[str, int] | None = None
) -> tuple[frozenset[int], bool]:
    """The set of values, and whether the field was `*` (unrestricted)."""
    names = names or {}
    values: set[int] = set()
    star = False
    for part in text.split(","):
        if not part:
            raise ScheduleError(f"{field}: empty list element in {text!r}")
        base, _, step_text = part.partition("/")
        step = 1
        if step_text:
            try:
                step = int(step_text)
            except ValueError:
                raise ScheduleError(f"{field}: bad step {step_text!r}") from None
            if step <= 0:
                raise ScheduleError(f"{field}: step must be positive")
        if base in ("*", "?"):
            start, end = lo, hi
            if not step_text:
                star = True
        elif "-" in base:
            a, _, b = base.partition("-")
            start = _value(a, names, lo, hi, field)
            end = _value(b, names, lo, hi, field)
            if start > end:
                raise ScheduleError(f"{field}: range {base!r} runs backwards")
        else:
            start = _value(base, names, lo, hi, field)
            end = hi if step_text else start
        values.update(range(start, end + 1, step))
    return frozenset(values), star


@dataclass(frozen=True)
class Schedule:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    days_star: bool
    weekdays_star: bool

    @classmethod
    def parse(cls, text: str) -> Schedule:
        text = text.strip()
        if text.startswith(("TZ=", "CRON_TZ=")):
            raise ScheduleError("time zones in the schedule are not supported; use spec.timeZone")
        text = _MACROS.get(text.lower(), text)
        fields = text.split()
        if len(fields) != 5:
            raise ScheduleError(f"expected 5 fields, got {len(fields)} in {text!r}")
        minutes, _ = _field(fields[0], 0, 59, "minute")
        hours, _ = _field(fields[1], 0, 23, "hour")
        days, days_star = _field(fields[2], 1, 31, "day of month")
        months, _ = _field(fields[3], 1, 12, "month", _MONTHS)
        weekdays, weekdays_star = _field(fields[4], 0, 7, "day of week", _DAYS)
        if 7 in weekdays:
            weekdays = (weekdays - {7}) | {0}
        return cls(minutes, hours, days, months, weekdays, days_star, weekdays_star)

    def _day_matches(self, when: datetime) -> bool:
        dom = when.day in self.days
        dow = (when.isoweekday() % 7) in self.weekdays
        if self.days_star or self.weekdays_star:
            return dom and dow
        return dom or dow

    def next_after(self, when: datetime, tz: tzinfo = UTC) -> datetime:
        """The first fire time strictly after `when`, reading the schedule
        in zone `tz` (returned aware, in UTC)."""
        after = when.astimezone(UTC)
        # Walk the zone's wall clock (naive), then place each match in the zone.
        t = after.astimezone(tz).replace(second=0, microsecond=0, tzinfo=None)
        t += timedelta(minutes=1)
        limit = t + timedelta(days=366 * 5)
        while t < limit:
            if t.month not in self.months:
                year, month = (t.year + 1, 1) if t.month == 12 else (t.year, t.month + 1)
                t = t.replace(year=year, month=month, day=1, hour=0, minute=0)
                continue
            if not self._day_matches(t):
                t = (t + timedelta(days=1)).replace(hour=0, minute=0)
                continue
            if t.hour not in self.hours:
                t = (t + timedelta(hours=1)).replace(minute=0)
                continue
            if t.minute not in self.minutes:
                t += timedelta(minutes=1)
                continue
            found = _place(t, tz)
            if found is not None and found > after:
                return found
            t += timedelta(minutes=1)
        # Kubernetes' words for a schedule that parses but never fires (Feb 30).
        raise ScheduleError("time difference between two schedules is less than 1 second")


def _place(wall: datetime, tz: tzinfo) -> datetime | None:
    """The instant of wall time `wall` in `tz` (its first, for a time the
    fall-back repeats), or None for one the spring-forward gap skips."""
    aware = wall.replace(tzinfo=tz, fold=0)
    utc = aware.astimezone(UTC)
    if utc.astimezone(tz).replace(tzinfo=None) != wall:
        return None
    return utc


def _dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


@dataclass(frozen=True)
class CronPlan:
    run_at: float | None = None  # the scheduled time to start a Job for
    replace_active: bool = False  # Replace: delete the active Jobs first
    skip_reason: str = (
        ""  # "", "Forbid", "MissedDeadline", "TooManyMissed", "AlreadyRan", "Suspended"
    )
    next_check: float | None = None  # when the next schedule falls


def most_recent_unmet(
    schedule: Schedule,
    earliest: float,
    now: float,
    tz: tzinfo = UTC,
) -> tuple[float | None, int]:
    """(the latest schedule time in (earliest, now], how many fell there)."""
    if earliest > now:
        return None, 0
    t = schedule.next_after(_dt(earliest), tz)
    last: float | None = None
    count = 0
    end = _dt(now)
    while t <= end:
        last = t.timestamp()
        count += 1
        if count > MAX_MISSED:
            # Jump: only the most recent matters.
            prev = t
            while True:
                nxt = schedule.next_after(prev, tz)
                if nxt > end:
                    return prev.timestamp(), count
                prev = nxt
                count += 1
        t = schedule.next_after(t, tz)
    return last, count


def plan_cronjob(
    spec: Mapping[str, Any],
    schedule: Schedule,
    created: float,
    last_schedule: float | None,
    active_jobs: int,
    now: float,
    tz: tzinfo = UTC,
) -> CronPlan:
    """Whether to start a Job now, and when to look again."""
    next_check = schedule.next_after(_dt(now), tz).timestamp()
    if spec.get("suspend"):
        return CronPlan(skip_reason="Suspended", next_check=next_check)
    earliest = last_schedule if last_schedule is not None else created
    deadline = spec.get("startingDeadlineSeconds")
    if deadline is not None:
        earliest = max(earliest, now - int(deadline))
    scheduled, count = most_recent_unmet(schedule, earliest, now, tz)
    if scheduled is None:
        return CronPlan(next_check=next_check)
    if count > MAX_MISSED and deadline is None:
        # Kubernetes still starts the most recent one but warns.
        pass
    if deadline is not None and scheduled + int(deadline) < now:
        return CronPlan(skip_reason="MissedDeadline", next_check=next_check)
    if last_schedule is not None and scheduled <= last_schedule:
        return CronPlan(skip_reason="AlreadyRan", next_check=next_check)
    policy = str(spec.get("concurrencyPolicy") or "Allow")
    if policy == "Forbid" and active_jobs > 0:
        return CronPlan(skip_reason="Forbid", next_check=next_check)
    return CronPlan(
        run_at=scheduled,
        replace_active=policy == "Replace" and active_jobs > 0,
        next_check=next_check,
    )


def job_name(cronjob_name: str, scheduled: float) -> str:
    """`<cronjob>-<scheduled time in minutes since the epoch>`, as Kubernetes names them."""
    return f"{cronjob_name}-{int(scheduled) // 60}"
