import threading
from pathlib import Path

from agent.logs import parse_lines, pick_file, read_log
from machinery.rfc3339 import parse_nano as parse_timestamp

LOG = (
    b"2026-01-01T00:00:00.000000001Z stdout F one\n"
    b"2026-01-01T00:00:01Z stderr F oops\n"
    b"2026-01-01T00:00:02.5Z stdout P par\n"
    b"2026-01-01T00:00:02.6Z stdout F tial\n"
    b"2026-01-01T00:00:03+01:00 stdout F three\n"
)


def test_timestamps() -> None:
    assert parse_timestamp("2026-01-01T00:00:00.000000001Z") % 1_000_000_000 == 1
    assert parse_timestamp("2026-01-01T01:00:00+01:00") == parse_timestamp("2026-01-01T00:00:00Z")


def test_partial_lines_are_joined() -> None:
    lines = list(parse_lines(iter(LOG.splitlines(keepends=True))))
    assert [(x.stream, x.data) for x in lines] == [
        ("stdout", b"one\n"),
        ("stderr", b"oops\n"),
        ("stdout", b"partial\n"),
        ("stdout", b"three\n"),
    ]


def test_tail_since_and_previous(tmp_path: Path) -> None:
    d = tmp_path / "c"
    d.mkdir()
    (d / "0.log").write_bytes(b"2026-01-01T00:00:00Z stdout F old\n")
    (d / "1.log").write_bytes(LOG)
    assert pick_file(d, previous=True) == d / "0.log"
    assert pick_file(d, previous=False) == d / "1.log"
    assert [x.data for x in read_log(d / "1.log", tail=2)] == [b"partial\n", b"three\n"]
    assert list(read_log(d / "1.log", tail=0)) == []
    since = parse_timestamp("2026-01-01T00:00:01Z")
    assert [x.data for x in read_log(d / "1.log", since_ns=since)] == [b"oops\n", b"partial\n"]


def test_follow_sees_new_lines_until_stopped(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    path.write_bytes(b"2026-01-01T00:00:00Z stdout F first\n")
    stop = threading.Event()
    # A line written in two pieces, then a partial entry continued by the next.
    writes = iter(
        [
            b"2026-01-01T00:00:01Z stdout F sec",
            b"ond\n",
            b"2026-01-01T00:00:02Z stdout P thi\n",
            b"2026-01-01T00:00:02Z stdout F rd\n",
        ]
    )

    def wait(_: float) -> None:
        chunk = next(writes, None)
        if chunk is None:
            stop.set()
            return
        with path.open("ab") as f:
            f.write(chunk)

    got = [
        x.data
        for x in read_log(path, follow=True, keep_following=lambda: not stop.is_set(), wait=wait)
    ]
    assert got == [b"first\n", b"second\n", b"third\n"]
