"""Rebuilding the runtime's state at start from the checkpoints under
--root, reconciled with what still runs: a sandbox whose monitor is gone is
NOTREADY, a container whose monitor wrote an exit file meanwhile is EXITED
with that code, one whose monitor vanished without a word is EXITED with
reason Unknown. Running containers are left alone (their monitors keep
logging). Never starts or kills anything."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from runtime.cri.service import RuntimeService
from runtime.store import checkpoint
from runtime.store.records import container_from_json, sandbox_from_json

log = logging.getLogger("skiff.runtime.recover")
T = TypeVar("T")


def _records(svc: RuntimeService, folder: str, what: str, from_json: Callable[[Any], T]) -> list[T]:
    """The records of the checkpoints `<root>/<folder>/*/meta.json`; an
    unreadable one is logged and skipped."""
    records = []
    for meta in sorted((svc.cfg.root / folder).glob("*/meta.json")):
        try:
            records.append(from_json(checkpoint.load(meta)))
        except (OSError, ValueError, TypeError, KeyError) as exc:
            log.warning("skipping unreadable %s checkpoint %s: %s", what, meta, exc)
    return records


def recover(svc: RuntimeService) -> tuple[int, int]:
    sandboxes = _records(svc, "sandboxes", "sandbox", sandbox_from_json)
    for s in sandboxes:
        svc.sandboxes.add_loaded(s)
    containers = _records(svc, "containers", "container", container_from_json)
    for c in containers:
        svc.containers.add_loaded(c)
    n_s, n_c = len(sandboxes), len(containers)
    from runtime.cri import sandbox_status

    for s in svc.sandboxes.list():
        sandbox_status.refresh(svc, s)
    for c in svc.containers.list():
        svc.refresh(c)
    log.info("recovered sandboxes=%d containers=%d", n_s, n_c)
    return n_s, n_c
