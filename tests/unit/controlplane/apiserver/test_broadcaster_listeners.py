"""The broadcaster's listeners: one with key prefixes hears only the events
under them; an object listener reads the event's object as decoded once for
every listener and watcher."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controlplane.apiserver.watch import Broadcaster
from controlplane.storage.interface import Event
from controlplane.storage.sqlite import SqliteStore


def test_listeners_hear_the_events_under_their_prefixes(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "state.db")
    broadcaster = Broadcaster(store)
    heard: dict[str, list[str]] = {"maps": [], "all": [], "objects": []}
    once: list[bool] = []  # a listener's failure is logged, not raised: recorded here
    done = threading.Event()

    def objects(event: Event, new: Callable[[], dict[str, Any]]) -> None:
        heard["objects"].append(new()["metadata"]["name"])
        once.append(new() is new())  # decoded once

    def everything(event: Event) -> None:
        heard["all"].append(event.key)
        if event.key.endswith("/last"):
            done.set()

    broadcaster.add_listener(lambda e: heard["maps"].append(e.key), ("/registry/configmaps/",))
    broadcaster.add_object_listener(objects, ("/registry/secrets/", "/registry/configmaps/"))
    broadcaster.add_listener(everything)
    broadcaster.start()
    try:
        store.create("/registry/configmaps/default/a", b'{"metadata":{"name":"a"}}')
        store.create("/registry/secrets/default/s", b'{"metadata":{"name":"s"}}')
        store.create("/registry/pods/default/p", b'{"metadata":{"name":"p"}}')
        store.create("/registry/pods/default/last", b'{"metadata":{"name":"last"}}')
        assert done.wait(10), heard
        assert heard["maps"] == ["/registry/configmaps/default/a"]
        assert heard["objects"] == ["a", "s"] and once == [True, True]
        assert len(heard["all"]) == 4
    finally:
        broadcaster.stop()
        store.close()
