"""Termination messages, as the kubelet makes and reads them.

Before a container starts, an empty file `<pod dir>/containers/<name>/<8
hex>` is made and bound (read-write) at the container's
terminationMessagePath (default /dev/termination-log); its policy rides in
an annotation. Once the container has exited, its message is the file's
last 4096 bytes (MaxContainerTerminationMessageLength); under
FallbackToLogsOnError, when the file is empty or missing and the container
failed (exit code not 0, and it did run), the last 80 lines of its log,
at most their last 2048 bytes (MaxContainerTerminationMessageLogLines and
...LogLength). A runtime's own message (OOMKilled's) comes first, joined
by ": ". The pod's status then caps each terminated state's message
(state and lastState, of init, app and ephemeral containers) at an equal
share of 12 KiB per container of the spec (init and app containers), its
first bytes kept: the kubelet's status manager does this to every status it
writes (normalizeStatus, MaxPodTerminationMessageLogLength), whatever the
messages add up to.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent.logs import read_log
from proto.runtime.v1 import api_pb2 as cri

POLICY_ANNOTATION = "io.kubernetes.container.terminationMessagePolicy"
PATH_ANNOTATION = "io.kubernetes.container.terminationMessagePath"
MAX_MESSAGE = 4 * 1024
MAX_LOG_LINES = 80
MAX_LOG_BYTES = 2 * 1024
MAX_POD_MESSAGES = 12 * 1024


def message_mount(pod_dir: Path, container: Mapping[str, Any]) -> cri.Mount | None:
    """A fresh, empty termination-log file bound at the container's
    terminationMessagePath (None when the path is empty)."""
    path = str(container.get("terminationMessagePath", "/dev/termination-log"))
    if not path:
        return None
    where = pod_dir / "containers" / str(container["name"])
    where.mkdir(mode=0o750, parents=True, exist_ok=True)
    host = where / secrets.token_hex(4)
    fd = os.open(host, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    os.fchmod(fd, 0o666)  # any user in the container may write it
    os.close(fd)
    return cri.Mount(container_path=path, host_path=str(host))


def _tail_bytes(path: str, limit: int) -> bytes:
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        f.seek(max(0, size - limit))
        return f.read(limit)


def _from_logs(log_path: str) -> str:
    try:
        lines = list(read_log(Path(log_path), tail=MAX_LOG_LINES))
    except OSError as err:
        return f"Error on reading termination message from logs: {err}"
    data = b"".join(line.data for line in lines)
    return data[-MAX_LOG_BYTES:].decode(errors="replace")


def read_message(status: cri.ContainerStatus) -> str:
    """The exited container's message for its status (the runtime's own
    reason text first)."""
    annotations = status.annotations
    path = annotations.get(PATH_ANNOTATION, "")
    fallback = (
        annotations.get(POLICY_ANNOTATION) == "FallbackToLogsOnError"
        and status.exit_code != 0
        and status.reason != "ContainerCannotRun"
    )
    text, check_logs = "", fallback
    mount = next((m for m in status.mounts if path and m.container_path == path), None)
    if mount is not None:
        try:
            data = _tail_bytes(mount.host_path, MAX_MESSAGE)
            text, check_logs = data.decode(errors="replace"), fallback and not data
        except FileNotFoundError:
            pass
        except OSError as err:
            text, check_logs = f"Error on reading termination log {mount.host_path}: {err}", False
    if check_logs and status.log_path:
        text = _from_logs(status.log_path)
    if not text:
        return status.message
    return f"{status.message}: {text}" if status.message else text


def cap_pod_messages(statuses: list[dict[str, Any]], containers: int) -> None:
    """Cut every terminated state's message to 12 KiB / `containers` (the
    pod's init and app containers) bytes, keeping its start (in place); a
    character the cut splits is dropped."""
    share = MAX_POD_MESSAGES // containers if containers > 0 else MAX_POD_MESSAGES
    for s in statuses:
        for t in (s["state"].get("terminated"), s["lastState"].get("terminated")):
            raw = (t or {}).get("message", "").encode()
            if len(raw) > share:
                t["message"] = raw[:share].decode(errors="ignore")
