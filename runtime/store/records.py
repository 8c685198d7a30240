"""Sandbox and container records, their state machines, and a thread-safe
store that checkpoints every change.

A record changes state only through `transition`, which refuses moves the
state machine does not allow. Records hold plain data (the CRI config is kept
serialized) so that this module needs neither grpc nor protobuf.
"""

from __future__ import annotations

import dataclasses
import enum
import shutil
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from runtime import errors
from runtime.store import checkpoint


class SandboxState(enum.Enum):
    READY = "ready"
    NOTREADY = "notready"


class ContainerState(enum.Enum):
    CREATED = "created"
    RUNNING = "running"
    EXITED = "exited"
    UNKNOWN = "unknown"


SANDBOX_MOVES = {
    SandboxState.READY: {SandboxState.NOTREADY},
    SandboxState.NOTREADY: set(),
}
CONTAINER_MOVES = {
    ContainerState.CREATED: {ContainerState.RUNNING, ContainerState.EXITED, ContainerState.UNKNOWN},
    ContainerState.RUNNING: {ContainerState.EXITED, ContainerState.UNKNOWN},
    ContainerState.UNKNOWN: {ContainerState.RUNNING, ContainerState.EXITED},
    ContainerState.EXITED: set(),
}


S = TypeVar("S", SandboxState, ContainerState)


def _move(what: str, state: S, new: S, moves: Mapping[S, set[S]]) -> S:
    """`new` if `moves` allows it from `state` (staying is always allowed)."""
    if new != state and new not in moves[state]:
        raise errors.FailedPrecondition(f"{what}: cannot go from {state.value} to {new.value}")
    return new


@dataclass
class Sandbox:
    id: str
    name: str
    namespace: str
    uid: str
    attempt: int
    config_b64: str
    created_at: int
    runtime_handler: str = ""
    state: SandboxState = SandboxState.READY
    monitor_pid: int = 0
    monitor_start: int = 0
    pid1: int = 0
    ip: str = ""
    additional_ips: list[str] = field(default_factory=list)
    host_network: bool = False
    ns_modes: dict[str, int] = field(default_factory=dict)
    cgroup: str = ""
    network_ready: bool = False

    KIND = "sandbox"

    @property
    def key(self) -> str:
        return f"{self.name}_{self.namespace}_{self.uid}_{self.attempt}"

    def transition(self, new: SandboxState) -> None:
        self.state = _move(f"sandbox {self.id}", self.state, new, SANDBOX_MOVES)


@dataclass
class Container:
    id: str
    sandbox_id: str
    name: str
    attempt: int
    config_b64: str
    created_at: int
    image: str
    image_ref: str
    image_id: str
    log_path: str
    cgroup: str
    state: ContainerState = ContainerState.CREATED
    started_at: int = 0
    finished_at: int = 0
    exit_code: int = 0
    reason: str = ""
    message: str = ""
    monitor_pid: int = 0
    monitor_start: int = 0
    init_pid: int = 0
    resources: dict[str, Any] = field(default_factory=dict)
    stop_signal: int = 15
    user: dict[str, Any] = field(default_factory=dict)

    KIND = "container"

    @property
    def key(self) -> str:
        return f"{self.name}_{self.sandbox_id}_{self.attempt}"

    def transition(self, new: ContainerState) -> None:
        self.state = _move(f"container {self.id}", self.state, new, CONTAINER_MOVES)


def to_json(rec: Sandbox | Container) -> dict[str, Any]:
    d = dataclasses.asdict(rec)
    d["state"] = rec.state.value
    return d


def sandbox_from_json(d: dict[str, Any]) -> Sandbox:
    d = dict(d)
    d["state"] = SandboxState(d["state"])
    return Sandbox(**d)


def container_from_json(d: dict[str, Any]) -> Container:
    d = dict(d)
    d["state"] = ContainerState(d["state"])
    return Container(**d)


R = TypeVar("R", Sandbox, Container)


class Store(Generic[R]):
    """Records by id, a name index (name -> id), one lock; every `save`
    writes `<dir>/<id>/meta.json` atomically."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.lock = threading.RLock()
        self.items: dict[str, R] = {}
        self.names: dict[str, str] = {}

    def dir(self, id_: str) -> Path:
        return self.base / id_

    def reserve(self, rec: R) -> None:
        with self.lock:
            holder = self.names.get(rec.key)
            if holder is not None:
                raise errors.AlreadyExists(f"{rec.KIND} name {rec.key!r} is reserved for {holder}")
            self.names[rec.key] = rec.id
            self.items[rec.id] = rec

    def save(self, rec: R) -> None:
        with self.lock:
            checkpoint.save(self.dir(rec.id) / "meta.json", to_json(rec))

    def add_loaded(self, rec: R) -> None:
        with self.lock:
            self.items[rec.id] = rec
            self.names[rec.key] = rec.id

    def delete(self, id_: str) -> None:
        with self.lock:
            rec = self.items.pop(id_, None)
            if rec is not None and self.names.get(rec.key) == id_:
                del self.names[rec.key]
            shutil.rmtree(self.dir(id_), ignore_errors=True)

    def forget(self, id_: str) -> None:
        """Drop a record from memory (its directory is the caller's)."""
        with self.lock:
            rec = self.items.pop(id_, None)
            if rec is not None and self.names.get(rec.key) == id_:
                del self.names[rec.key]

    def get(self, id_: str) -> R:
        """By full id or unique prefix (as crictl passes them)."""
        with self.lock:
            rec = self.items.get(id_)
            if rec is not None:
                return rec
            if id_:
                matches = [r for k, r in self.items.items() if k.startswith(id_)]
                if len(matches) == 1:
                    return matches[0]
                if len(matches) > 1:
                    raise errors.InvalidArgument(f"id prefix {id_!r} is ambiguous")
            raise errors.NotFound(f"{self._kind()} {id_!r} not found")

    def find(self, id_: str) -> R | None:
        try:
            return self.get(id_)
        except errors.NotFound:
            return None

    def _kind(self) -> str:
        return "sandbox" if self.base.name == "sandboxes" else "container"

    def list(self) -> list[R]:
        with self.lock:
            return list(self.items.values())

    def __iter__(self) -> Iterator[R]:
        return iter(self.list())
