"""The CRI list filters, shared by ListContainers, ListContainerStats,
ListPodSandbox and ListPodSandboxStats: an id (or prefix), a sandbox id (or
prefix) for containers, and labels that must all match. States are checked
by the callers that have them, after these cheap checks (a state needs a
refresh, which reads /proc)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Protocol

from runtime.cri import container_status, sandbox_status
from runtime.cri.service import RuntimeService
from runtime.store.records import Container, Sandbox


class _SandboxFilter(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def label_selector(self) -> Mapping[str, str]: ...


class _ContainerFilter(_SandboxFilter, Protocol):
    @property
    def pod_sandbox_id(self) -> str: ...


def _labels_match(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def containers(svc: RuntimeService, f: _ContainerFilter) -> Iterator[Container]:
    """The containers that pass the filter's id, sandbox id and labels."""
    for c in svc.containers.list():
        if f.id and not c.id.startswith(f.id):
            continue
        if f.pod_sandbox_id and not c.sandbox_id.startswith(f.pod_sandbox_id):
            continue
        if _labels_match(container_status.config_of(c).labels, f.label_selector):
            yield c


def sandboxes(svc: RuntimeService, f: _SandboxFilter) -> Iterator[Sandbox]:
    """The sandboxes that pass the filter's id and labels."""
    for s in svc.sandboxes.list():
        if f.id and not s.id.startswith(f.id):
            continue
        if _labels_match(sandbox_status.config_of(s).labels, f.label_selector):
            yield s
