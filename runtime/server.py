"""Wiring `skiff runtime` together: the image store and ImageService
(runtime.image), the CNI client, the RuntimeService, state recovery, and the
gRPC server on a unix socket (mode 0660), plus the ImageService on
--image-listen if asked. A part that fails to import stops the runtime with
the error; nothing is silently left out. The streaming server is imported
on the first Exec, Attach or PortForward (LazyStreaming).

Nothing here handles a request; the servicers do.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

from machinery.metrics import MetricsServer
from machinery.metrics import serve as serve_metrics
from proto.runtime.v1 import api_pb2_grpc
from runtime import errors
from runtime.config import Config
from runtime.cri.service import Images, Network, RuntimeService
from runtime.cri.servicer import RuntimeServicer
from runtime.host import LinuxHost
from runtime.linux.pause import ensure_pause
from runtime.metrics import RuntimeMetrics
from runtime.process.zygote import Zygote
from runtime.recover import recover

log = logging.getLogger("skiff.runtime")


# (image store, ImageService servicer or None) for a configuration.
ImagesFactory = Callable[[Config], tuple[Images | None, Any]]


def build_images(cfg: Config) -> tuple[Images | None, Any]:
    """(image store, ImageService servicer)."""
    from runtime.image import build

    store, servicer = build(
        cfg.root / "images",
        cfg.registry_config,
        cfg.disable_default_registry_endpoint,
        cfg.max_layer_expansion,
    )
    return store, servicer


def build_network(cfg: Config) -> Network:
    from runtime.network.cni_client import CNIClient

    cache = cfg.cni_cache_dir or (cfg.state / "cni-cache")
    # the sandbox monitor brings `lo` up itself: no loopback plugin exec per pod
    # (CNIClient's setup/teardown name the keywords Network's take as **kw)
    client: Any = CNIClient(cfg.cni_conf_dir, list(cfg.cni_bin_dirs), cache, loopback=False)
    return client  # type: ignore[no-any-return]


def build_streaming(svc: RuntimeService) -> Any:
    """The streaming server for Exec/Attach/PortForward URLs."""
    from runtime import streaming
    from runtime.cri.streaming_backend import RuntimeStreamingBackend

    config = streaming.StreamingConfig(address=svc.cfg.stream_address, port=svc.cfg.stream_port)
    return streaming.StreamingServer(RuntimeStreamingBackend(svc), config)


class LazyStreaming:
    """The streaming server, built and started on the first Exec, Attach or
    PortForward. A runtime that never streams does not load runtime.streaming
    (HTTP, SPDY and WebSocket: 1.7 MB RSS at rest) nor runs its listener."""

    def __init__(self, svc: RuntimeService) -> None:
        self._svc = svc
        self._server: Any = None
        self._stopped = False
        self._lock = threading.Lock()

    def _started(self) -> Any:
        with self._lock:
            if self._server is None:
                if self._stopped:
                    raise errors.Unavailable("the runtime is stopping")
                server = build_streaming(self._svc)
                server.start()
                self._server = server
            return self._server

    def get_exec(self, req: Any) -> str:
        return str(self._started().get_exec(req))

    def get_attach(self, req: Any) -> str:
        return str(self._started().get_attach(req))

    def get_port_forward(self, req: Any) -> str:
        return str(self._started().get_port_forward(req))

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            server, self._server = self._server, None
        if server is not None:
            server.stop()


def _listen(server: grpc.Server, address: str) -> Path:
    path = Path(address.removeprefix("unix://"))
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_socket():
        path.unlink()
    old = os.umask(0o117)
    try:
        if not server.add_insecure_port("unix:" + str(path)):
            raise OSError(f"cannot listen on {address}")
    finally:
        os.umask(old)
    return path


class Server:
    def __init__(self, cfg: Config, images_factory: ImagesFactory = build_images) -> None:
        """`images_factory` builds the image store and ImageService (tests
        give a fake, tests/fakes/image_store.py)."""
        self.cfg = cfg
        for d in (cfg.root, cfg.state, cfg.root / "sandboxes", cfg.root / "containers"):
            d.mkdir(parents=True, exist_ok=True)
        # private: container upper dirs, rootfs mounts and state must be
        # unreachable to host users (a setuid file made in a root container
        # would run as root for them: the CVE-2021-41091 class)
        os.chmod(cfg.root, 0o700)
        os.chmod(cfg.state, 0o700)
        images, image_servicer = images_factory(cfg)
        self.host = LinuxHost(cfg.cgroup_root)
        self.svc = RuntimeService(cfg, images, build_network(cfg), self.host)
        recover(self.svc)
        self.svc.janitor.start()
        # under root, not state: state is usually on /run, which systemd
        # mounts noexec (on a VM with systemd every pod sandbox failed)
        self.svc.pause = ensure_pause(str(cfg.root / "pause"))
        # the zygote itself starts with the first monitor asked for
        self.host.zygote = Zygote(cfg.state / "zygote", cfg.state / "zygote" / "zygote.log")
        self.host.zygote.listen()
        self.metrics = RuntimeMetrics()
        self._metrics_server: MetricsServer | None = None
        self.grpc = grpc.server(
            futures.ThreadPoolExecutor(max_workers=32), interceptors=[self.metrics.interceptor()]
        )
        api_pb2_grpc.add_RuntimeServiceServicer_to_server(RuntimeServicer(self.svc), self.grpc)  # type: ignore[abstract]
        if image_servicer is not None:
            api_pb2_grpc.add_ImageServiceServicer_to_server(image_servicer, self.grpc)
        self.image_grpc: grpc.Server | None = None
        if cfg.image_listen and image_servicer is not None:
            self.image_grpc = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
            api_pb2_grpc.add_ImageServiceServicer_to_server(image_servicer, self.image_grpc)
        self.streaming = LazyStreaming(self.svc)
        self.socket = _listen(self.grpc, cfg.listen)
        if self.image_grpc is not None:
            _listen(self.image_grpc, cfg.image_listen)
        self.stopped = threading.Event()

    def start(self) -> None:
        self.svc.streaming = self.streaming  # starts on the first Exec/Attach/PortForward
        self.grpc.start()
        if self.image_grpc is not None:
            self.image_grpc.start()
        os.chmod(self.socket, 0o660)
        if self.cfg.metrics_address:
            self._metrics_server = serve_metrics(self.metrics.registry, self.cfg.metrics_address)
        log.info("serving CRI on %s", self.cfg.listen)

    def stop(self, grace: float = 2.0) -> None:
        self.grpc.stop(grace).wait()
        if self._metrics_server is not None:
            self._metrics_server.stop()
        if self.image_grpc is not None:
            self.image_grpc.stop(grace).wait()
        if self.streaming is not None:
            self.streaming.stop()
        if self.host.zygote is not None:
            self.host.zygote.stop()
        self.stopped.set()
