"""What every REST handler is given: the registry, the broadcaster, the
executor that runs blocking registry calls, and the caller's identity."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aiohttp import web

from controlplane.api import jsoncodec
from controlplane.apiserver.aggregator.availability import Aggregator
from controlplane.apiserver.audit import AuditLog
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.flowcontrol import FlowControl
from controlplane.apiserver.metrics import ApiServerMetrics
from controlplane.apiserver.metricsapi.collector import Collector
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.rest.paths import Target
from controlplane.apiserver.rest.status import BadRequest
from controlplane.apiserver.watch import Broadcaster
from controlplane.client.agents import AgentTLS
from controlplane.client.errors import Invalid

T = TypeVar("T")


@dataclass
class Server:
    """The parts shared by every request."""

    registry: Registry
    broadcaster: Broadcaster
    executor: ThreadPoolExecutor
    flow: FlowControl
    audit: AuditLog | None = None
    min_watch_timeout: float = 1800.0
    agent_tls: AgentTLS | None = None  # the API server's own credential towards agents
    # When set, the current credential (followed on disk across a rotation).
    agent_tls_now: Callable[[], AgentTLS] | None = None
    # The control plane's components by ComponentStatus name ("scheduler",
    # "controller-manager"): each says why it is unhealthy, "" when healthy.
    components: dict[str, Callable[[], str]] = field(default_factory=dict)
    metrics: ApiServerMetrics | None = None  # None: no /metrics, nothing counted
    # API aggregation: which group/versions extension API servers serve.
    aggregator: Aggregator | None = None
    # The built-in metrics API's scrapes of the agents (metricsapi/).
    metrics_api: Collector | None = None

    def agent_credential(self) -> AgentTLS | None:
        return self.agent_tls_now() if self.agent_tls_now is not None else self.agent_tls

    async def run(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """func(*args, **kwargs) on the executor: registry calls block. It runs
        in a copy of this task's context, so admission plugins reach the
        request's warnings and audit annotations (admission_context).

        As loop.run_in_executor, with less of the event loop's time per call
        (every write makes one): the worker hands its outcome straight to
        this task's future, where run_in_executor chains a second future
        through callbacks on both sides. A cancelled caller (its client
        gone) cancels a call not yet started, as run_in_executor does."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        context = contextvars.copy_context()

        def work() -> None:
            try:
                result = context.run(func, *args, **kwargs)
            except BaseException as err:  # handed to the caller, as a Future does
                _settle_soon(loop, done, None, err)
            else:
                _settle_soon(loop, done, result, None)

        started = self.executor.submit(work)
        try:
            return await done
        except asyncio.CancelledError:
            started.cancel()
            raise


def _settle_soon(
    loop: asyncio.AbstractEventLoop, done: asyncio.Future[Any], result: Any,
    err: BaseException | None,
) -> None:  # fmt: skip
    """From a worker: `done` given its outcome on its loop (not once that is closed)."""
    try:
        loop.call_soon_threadsafe(_settle, done, result, err)
    except RuntimeError:  # the loop closed meanwhile (shutting down): nobody waits
        pass


def _settle(done: asyncio.Future[Any], result: Any, err: BaseException | None) -> None:
    if done.cancelled():
        return
    if err is not None:
        done.set_exception(err)
    else:
        done.set_result(result)


@dataclass
class Call:
    """One resource request."""

    server: Server
    request: web.Request
    target: Target
    who: Identity

    @property
    def registry(self) -> Registry:
        return self.server.registry

    def query(self, name: str, default: str = "") -> str:
        return self.request.query.get(name, default)

    @property
    def namespace(self) -> str | None:
        return self.target.namespace or None

    def dry_run(self, from_body: Any = None) -> bool:
        """Whether this write is a dry run: `dryRun` from the query and from the
        options body (DeleteOptions, an Eviction's deleteOptions), the only
        value being `All`. Anything else is refused as kube-apiserver refuses
        it: 422 naming the options kind of the verb."""
        values: list[Any] = list(self.request.query.getall("dryRun", []))
        if from_body is not None:
            if not isinstance(from_body, list):
                raise BadRequest(
                    f"dryRun: must be a list of strings, not {type(from_body).__name__}"
                )
            values += from_body
        if any(value != "All" for value in values):
            options = _OPTIONS.get(self.request.method, "CreateOptions")
            raise Invalid(
                f'{options}.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
                f'{jsoncodec.dumps(values).decode()}: supported values: "All"'
            )
        return bool(values)


# The options kind each verb's dryRun belongs to (its 422 names it).
_OPTIONS = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions",
            "DELETE": "DeleteOptions"}  # fmt: skip
