"""The RuntimeService's shared state and the operations more than one RPC
needs: where things live on disk, refreshing a container from its monitor's
exit file, stopping a container, stopping a sandbox.

The service holds its dependencies as small interfaces (`Images`, `Network`,
and `runtime.host.Host` for everything it leaves on the machine) so handler
logic, undo paths included, can run against fakes. It never touches gRPC
status codes (handlers raise `runtime.errors`), never forks, never enters a
namespace, and never calls the host except through `self.host`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import signal
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from machinery.atomicfile import move_aside
from runtime import errors
from runtime.config import Config
from runtime.host import Host, LinuxHost
from runtime.linux import cgroups, namespaces
from runtime.store.records import Container, ContainerState, R, Sandbox, SandboxState, Store

log = logging.getLogger("skiff.runtime")


class ImageRecordLike(Protocol):
    id: str
    repo_tags: list[str]
    repo_digests: list[str]
    config: dict[str, Any]


class Images(Protocol):
    def resolve(self, ref: str) -> Any: ...
    def layer_dirs(self, rec: Any) -> list[Path]: ...
    def hold(self, image_id: str, holder: str) -> None: ...
    def release(self, image_id: str, holder: str) -> None: ...


class Network(Protocol):
    def status(self) -> str | None: ...
    def setup(self, sandbox_id: str, netns_path: str, **kw: Any) -> Any: ...
    def teardown(self, sandbox_id: str, netns_path: str, **kw: Any) -> Any: ...


class RuntimeService:
    def __init__(
        self,
        cfg: Config,
        images: Images | None,
        network: Network | None,
        host: Host | None = None,
    ) -> None:
        self.cfg = cfg
        self.images = images
        self.network = network
        self.host: Host = host if host is not None else LinuxHost(cfg.cgroup_root)
        self.sandboxes: Store[Sandbox] = Store(cfg.root / "sandboxes")
        self.containers: Store[Container] = Store(cfg.root / "containers")
        self.pod_cidr = ""
        self.janitor = Janitor(cfg.root / "trash")
        self.pause: str | None = None
        self.streaming: Any = None  # runtime.streaming.StreamingServer, set by the server
        self.cpu_samples: dict[str, tuple[int, int]] = {}
        self.locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()

    # --- paths ---------------------------------------------------------------
    def reserve(
        self, undo: contextlib.ExitStack, store: Store[R], rec: R, root: Path, state: Path
    ) -> None:
        """`rec` reserved in `store` and its `root` and `state` made (mode
        0700), all undone by `undo`: a create that fails leaves no trace."""
        store.reserve(rec)
        undo.callback(store.delete, rec.id)
        for d in (root, state):
            self.host.make_dir(d, 0o700)
            undo.callback(self.host.remove_tree, d)

    def sandbox_root(self, sid: str) -> Path:
        return self.cfg.root / "sandboxes" / sid

    def sandbox_state(self, sid: str) -> Path:
        return self.cfg.state / "sandboxes" / sid

    def container_root(self, cid: str) -> Path:
        return self.cfg.root / "containers" / cid

    def container_state(self, cid: str) -> Path:
        return self.cfg.state / "containers" / cid

    def ns_path(self, sid: str, kind: str) -> Path:
        return self.sandbox_state(sid) / "ns" / kind

    def lock(self, id_: str) -> threading.Lock:
        with self._locks_lock:
            return self.locks.setdefault(id_, threading.Lock())

    def cgroup(self, rel: str) -> cgroups.Cgroup:
        return self.host.cgroup(rel)

    # --- containers ----------------------------------------------------------
    def running(self, container_id: str) -> Container:
        """The container (refreshed); FailedPrecondition unless it is running."""
        c = self.refresh(self.containers.get(container_id))
        if c.state != ContainerState.RUNNING:
            raise errors.FailedPrecondition(f"container {c.id} is not running")
        return c

    def refresh(self, c: Container) -> Container:
        """Bring a container's record in line with its monitor: an exit file
        means exited (with its code); a vanished monitor without one means
        the exit status is lost."""
        if c.state == ContainerState.EXITED:
            return c
        if c.state == ContainerState.CREATED and not c.monitor_pid:
            return c  # nothing runs before StartContainer
        exit_file = self.container_root(c.id) / "exit.json"
        info: dict[str, Any] | None = None
        with contextlib.suppress(FileNotFoundError, ValueError):
            info = json.loads(exit_file.read_text())
        if info is None and self.host.alive(c.monitor_pid, c.monitor_start):
            return c
        with self.containers.lock:
            if is_exited(c):
                return c
            if info is None:
                # double-check: the monitor may have written it meanwhile
                with contextlib.suppress(FileNotFoundError, ValueError):
                    info = json.loads(exit_file.read_text())
            if info is None:
                c.exit_code = 255
                c.finished_at = time.time_ns()
                c.reason = "Unknown"
                c.message = "the container's monitor exited without recording an exit status"
            else:
                c.exit_code = int(info["exit_code"])
                c.finished_at = int(info["finished_at"])
                if info.get("start_error") and c.started_at == 0:
                    c.reason, c.message, c.exit_code = "StartError", str(info["start_error"]), 128
                elif info.get("oom_killed"):
                    c.reason = "OOMKilled"
                elif not c.reason:
                    c.reason = "Completed" if c.exit_code == 0 else "Error"
            if c.started_at == 0 and not c.reason.startswith("Start"):
                c.finished_at = c.finished_at or time.time_ns()
            c.transition(ContainerState.EXITED)
            self.containers.save(c)
        return c

    def stop_container(self, c: Container, timeout: float) -> None:
        """SIGTERM (or the image's stop signal), then SIGKILL to everything in
        the container's cgroup after `timeout` seconds; 0 kills at once."""
        self.refresh(c)
        if c.state == ContainerState.EXITED:
            return
        if c.state == ContainerState.CREATED and not c.monitor_pid:
            return  # never started: nothing to stop (containerd does the same)
        host = self.host
        mon_alive = host.alive(c.monitor_pid, c.monitor_start)
        if mon_alive and timeout > 0 and c.state == ContainerState.RUNNING and c.init_pid:
            host.kill(c.init_pid, c.stop_signal or signal.SIGTERM)
            if host.wait_exit(c.init_pid, timeout):
                host.wait_exit(c.monitor_pid, 5)
                self.refresh(c)
                if is_exited(c):
                    return
        cg = self.cgroup(c.cgroup)
        if c.init_pid and mon_alive:
            host.kill(c.init_pid, signal.SIGKILL)
        cg.kill_all()
        if mon_alive:
            host.wait_exit(c.monitor_pid, 10)
        self.refresh(c)

    def destroy_container(self, c: Container) -> None:
        """Kill what is left, then hand the cgroup and the directories to the
        janitor: they are renamed away at once and deleted in the background,
        so the call does not wait on rmdir of a writable layer."""
        self.stop_container(c, 0)
        cg = self.cgroup(c.cgroup)
        cg.kill_all()
        if self.images is not None and c.image_id:
            with contextlib.suppress(Exception):
                self.images.release(c.image_id, c.id)
        self.janitor.discard(self.container_state(c.id))
        with self.containers.lock:
            self.janitor.discard(self.container_root(c.id))
            self.containers.forget(c.id)
        self.janitor.destroy_cgroup(cg)
        self.cpu_samples.pop(c.id, None)

    # --- sandboxes -----------------------------------------------------------
    def sandbox_config_b64(self, s: Sandbox) -> bytes:
        return base64.b64decode(s.config_b64)

    def stop_sandbox(self, s: Sandbox) -> None:
        for c in self.containers.list():
            if c.sandbox_id == s.id:
                self.stop_container(c, 0)
        if not s.host_network and self.network is not None and s.network_ready:
            try:
                self.network.teardown(s.id, str(self.ns_path(s.id, "net")), **self.cni_args(s))
            except Exception as exc:
                raise errors.Unknown(
                    f"failed to tear down network of sandbox {s.id}: {exc}"
                ) from None
            s.network_ready = False
        host = self.host
        if host.alive(s.monitor_pid, s.monitor_start):
            host.kill(s.monitor_pid, signal.SIGKILL)
            if s.pid1:
                host.kill(s.pid1, signal.SIGKILL)
            host.wait_exit(s.monitor_pid, 5)
        for kind in namespaces.KINDS:
            host.unpin_namespace(self.ns_path(s.id, kind))
        host.unmount(self.sandbox_state(s.id) / "shm")
        with self.sandboxes.lock:
            s.transition(SandboxState.NOTREADY)
            self.sandboxes.save(s)

    def cni_args(self, s: Sandbox) -> dict[str, Any]:
        return {"pod_name": s.name, "pod_namespace": s.namespace, "pod_uid": s.uid}


def is_exited(c: Container) -> bool:
    """(A function, so type checkers do not narrow the state across calls
    that change it.)"""
    return c.state == ContainerState.EXITED


class Janitor:
    """Deletes discarded directories and emptied cgroups on a background
    thread. `discard` renames a directory into the trash at once (same
    filesystem), so the object is gone for every reader when it returns;
    whatever is in the trash at start is deleted too."""

    def __init__(self, trash: Path) -> None:
        import queue

        self.trash = trash
        self.queue: queue.Queue[Path | cgroups.Cgroup] = queue.Queue()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        self.trash.mkdir(parents=True, exist_ok=True)
        for p in self.trash.iterdir():
            self.queue.put(p)
        self.thread = threading.Thread(target=self._run, name="janitor", daemon=True)
        self.thread.start()

    def discard(self, path: Path) -> None:
        if not path.exists():
            return
        if self.thread is None:
            import shutil

            shutil.rmtree(path, ignore_errors=True)
            return
        dest = self.trash / f"{path.parent.name}-{path.name}-{time.time_ns()}"
        try:
            move_aside(path, dest)
        except OSError:
            import shutil

            shutil.rmtree(path, ignore_errors=True)
            return
        self.queue.put(dest)

    def destroy_cgroup(self, cg: cgroups.Cgroup) -> None:
        if self.thread is None:
            with contextlib.suppress(OSError):
                cg.destroy()
            return
        self.queue.put(cg)

    def drain(self) -> None:
        self.queue.join()

    def _run(self) -> None:
        import shutil

        while True:
            item = self.queue.get()
            try:
                if isinstance(item, Path):
                    shutil.rmtree(item, ignore_errors=True)
                else:
                    item.destroy()
            except Exception:
                log.exception("janitor could not remove %s", item)
            finally:
                self.queue.task_done()
