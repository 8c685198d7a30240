"""The control plane stops in reverse start order (issue 27 item 5): each
in-process component is stopped and waited for (its Lease released) before
the next, the last started first, and the API server only after all of
them; before, the server stopped while the components were still writing."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from controlplane import main as cp_main
from controlplane.client.config import ClientConfig


class Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []
        self.lock = threading.Lock()

    def add(self, what: str) -> None:
        with self.lock:
            self.events.append(what)


class Part:
    def __init__(self, name: str, rec: Recorder) -> None:
        self.name, self.rec = name, rec

    def stop(self) -> None:
        self.rec.add(self.name)

    def close(self) -> None:
        self.rec.add(f"{self.name} closed")


def component(name: str, rec: Recorder) -> cp_main.StartedComponent:
    stop = threading.Event()

    def run() -> None:
        stop.wait()
        threading.Event().wait(0.05)  # a last write (the Lease released) takes a moment
        rec.add(name)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return cp_main.StartedComponent(name, stop, thread)


def test_components_stop_last_first_before_the_api_server(tmp_path: Path) -> None:
    rec = Recorder()
    running = cp_main.RunningControlPlane(
        server=Part("api server", rec),  # type: ignore[arg-type]
        store=Part("store", rec),  # type: ignore[arg-type]
        address="127.0.0.1:1",
        admin=ClientConfig("127.0.0.1:1"),
        join_token="",
        data_dir=tmp_path,
        stop_event=threading.Event(),
    )
    for name in ("scheduler", "volcano-scheduler", "controllers"):
        running.components.append(component(name, rec))
    clients: dict[str, Any] = {"scheduler": Part("scheduler client", rec)}
    running.clients = clients
    running.stop()
    assert rec.events == [
        "controllers",
        "volcano-scheduler",
        "scheduler",
        "api server",
        "scheduler client closed",
        "store closed",
    ]
