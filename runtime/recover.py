"""Rebuilding the runtime's state at start from the checkpoints under
--root, reconciled with what still runs: a sandbox whose monitor is gone is
NOTREADY, a container whose monitor wrote an exit file meanwhile is EXITED
with that code, one whose monitor vanished without a word is EXITED with
reason Unknown. Running containers are left alone (their monitors keep
logging). Never starts or kills anything."""

from __future__ import annotations

import logging

from runtime.cri.service import RuntimeService
from runtime.store import checkpoint
from runtime.store.records import container_from_json, sandbox_from_json

log = logging.getLogger("skiff.runtime.recover")


def recover(svc: RuntimeService) -> tuple[int, int]:
    n_s = n_c = 0
    for meta in sorted((svc.cfg.root / "sandboxes").glob("*/meta.json")):
        try:
            s = sandbox_from_json(checkpoint.load(meta))
        except (OSError, ValueError, TypeError, KeyError) as exc:
            log.warning("skipping unreadable sandbox checkpoint %s: %s", meta, exc)
            continue
        svc.sandboxes.add_loaded(s)
        n_s += 1
    for meta in sorted((svc.cfg.root / "containers").glob("*/meta.json")):
        try:
            c = container_from_json(checkpoint.load(meta))
        except (OSError, ValueError, TypeError, KeyError) as exc:
            log.warning("skipping unreadable container checkpoint %s: %s", meta, exc)
            continue
        svc.containers.add_loaded(c)
        n_c += 1
    from runtime.cri import sandbox_status

    for s in svc.sandboxes.list():
        sandbox_status.refresh(svc, s)
    for c in svc.containers.list():
        svc.refresh(c)
    log.info("recovered sandboxes=%d containers=%d", n_s, n_c)
    return n_s, n_c
