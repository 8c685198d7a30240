"""Event (v1, also served as events.k8s.io/v1): a report of something that
happened to an object.

Validation: involvedObject (or regarding) an object. events.k8s.io/v1 has
other names for the fields that moved (regarding/note/reportingController
... <-> involvedObject/message/source ...); objects are stored core-shaped
and converted on the way in and out. Columns: LAST SEEN TYPE REASON OBJECT
MESSAGE; wide adds SUBOBJECT and SOURCE before MESSAGE and FIRST SEEN, COUNT,
NAME after it, as Kubernetes' printEvent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from controlplane.api.checks import Errors, mapping
from controlplane.api.display import human_duration, meta
from controlplane.api.kinds.definition import Column, Conversion, KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import facts
from controlplane.api.schema import CORE, Type, declare
from machinery.rfc3339 import parse_time

Object = dict[str, Any]


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    regarding: Any = obj.get("involvedObject", obj.get("regarding"))
    mapping(e, "involvedObject", regarding)


# ---- columns --------------------------------------------------------------------------


def involved(ev: Object) -> str:
    """The OBJECT column: kind/name of the object the event is about."""
    inv = ev.get("involvedObject") or ev.get("regarding") or {}
    return f"{str(inv.get('kind', '')).lower()}/{inv.get('name', '')}"


def last_seen(ev: Object) -> float | None:
    """When the event last happened (epoch seconds), None when it does not say."""
    for key in ("lastTimestamp", "eventTime", "firstTimestamp"):
        t = parse_time(ev.get(key))
        if t is not None:
            return t
    series = ev.get("series") or {}
    t = parse_time(series.get("lastObservedTime"))
    return t if t is not None else parse_time(meta(ev).get("creationTimestamp"))


def row(obj: Object, now: float, wide: bool) -> list[str]:
    t = last_seen(obj)
    count = obj.get("count") or (obj.get("series") or {}).get("count")
    last = "<unknown>" if t is None else human_duration(now - t)
    if count and int(count) > 1:
        first = parse_time(obj.get("firstTimestamp"))
        if first is not None:
            last += f" (x{count} over {human_duration(now - first)})"
        else:
            last += f" (x{count})"
    cells = [
        last,
        str(obj.get("type") or "Normal"),
        str(obj.get("reason") or ""),
        involved(obj),
        str(obj.get("message") or obj.get("note") or "").strip(),
    ]
    if wide:  # printEvent's wide cells: SUBOBJECT SOURCE before MESSAGE; FIRST SEEN COUNT NAME
        inv = obj.get("involvedObject") or obj.get("regarding") or {}
        src = obj.get("source") or {}
        source = str(src.get("component") or obj.get("reportingComponent") or "")
        if source and src.get("host"):
            source += f", {src['host']}"
        first = parse_time(obj.get("firstTimestamp"))
        cells[4:4] = [str(inv.get("fieldPath") or ""), source]
        cells += [
            "<unknown>" if first is None else human_duration(now - first),
            str(count or 1),
            str(meta(obj).get("name", "")),
        ]
    return cells


# ---- events.k8s.io/v1 -----------------------------------------------------------------

# events.k8s.io/v1 field <-> core v1 field, for the fields that only moved.
_RENAMES = (
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("deprecatedSource", "source"),
    ("reportingController", "reportingComponent"),
)


def _renamed(obj: Object, renames: Iterable[tuple[str, str]], api_version: str) -> Object:
    """A copy of obj with each (from, to) field renamed, at `api_version`."""
    out = dict(obj)
    for source, target in renames:
        if source in out:
            out[target] = out.pop(source)
    out["apiVersion"] = api_version
    return out


def to_core(obj: Object) -> Object:
    if obj.get("apiVersion") in (None, "", "v1") and "regarding" not in obj:
        return obj  # already core-shaped
    return _renamed(obj, _RENAMES, "v1")


def to_events(obj: Object) -> Object:
    return _renamed(obj, ((old, new) for new, old in _RENAMES), "events.k8s.io/v1")


_TYPES: dict[str, Type] = {
    **declare(
        CORE,
        """
        Event [v1 Event]: Event is a report of an event somewhere in the cluster.
            involvedObject      object   The object that this event is about.
            reason              string   Short, machine understandable reason for the transition.
            message             string   A human-readable description of the status of this
                                         operation.
            source              object   The component reporting this event.
            firstTimestamp      time     The time at which the event was first recorded.
            lastTimestamp       time     The time of the most recent occurrence.
            count               integer  The number of times this event has occurred.
            type                string   Normal or Warning.
            eventTime           string   Time when this Event was first observed (microseconds).
            series              object   Data about the Event series this event represents.
            action              string   What action was taken/failed regarding the object.
            related             object   Optional secondary object for more complex actions.
            reportingComponent  string   Name of the controller that emitted this Event.
            reportingInstance   string   ID of the controller instance.
        """,
    ),
}

# The events.k8s.io/v1 form of Event has other field names.
_TYPES["EventsV1Event"] = Type(
    "io.k8s.api.events.v1",
    "Event is a report of an event somewhere in the cluster (events.k8s.io/v1).",
    {
        **{
            k: v
            for k, v in _TYPES["Event"].fields.items()
            if k in ("apiVersion", "kind", "metadata")
        },
        "eventTime": ("string", "Time when this Event was first observed (microseconds)."),
        "series": ("object", "Data about the Event series this event represents."),
        "reportingController": ("string", "The controller that emitted this Event."),
        "reportingInstance": ("string", "ID of the controller instance."),
        "action": ("string", "What action was taken/failed regarding the regarding object."),
        "reason": ("string", "Why the action was taken."),
        "regarding": ("object", "The object this Event is about."),
        "related": ("object", "Optional secondary object for more complex actions."),
        "note": ("string", "A human-readable description of the status of this operation."),
        "type": ("string", "Normal or Warning."),
        "deprecatedSource": ("object", "Deprecated field of core/v1 Event."),
        "deprecatedFirstTimestamp": ("time", "Deprecated field of core/v1 Event."),
        "deprecatedLastTimestamp": ("time", "Deprecated field of core/v1 Event."),
        "deprecatedCount": ("integer", "Deprecated field of core/v1 Event."),
    },
    ("eventTime",),
    (("events.k8s.io", "v1", "Event"),),
    name="Event",
)

DEFINITION = KindDef(
    KindInfo(
        "Event",
        "v1",
        short_names=("ev",),
        has_status=False,
        also_api_versions=("events.k8s.io/v1",),
    ),
    types=_TYPES,
    validate=validate,
    printer=Printer(
        (
            *columns(("LAST SEEN", "TYPE", "REASON", "OBJECT")),
            Column("SUBOBJECT", 1),
            Column("SOURCE", 1),
            Column("MESSAGE"),
            Column("FIRST SEEN", 1),
            Column("COUNT", 1),
            Column("NAME", 1, format="name"),
        ),
        row,
    ),
    patch_meta=facts(),
    conversions={"events.k8s.io/v1": Conversion(to_core, to_events)},
)
