"""emptyDir.sizeLimit (issue 32): checked as a quantity by the API server,
given to tmpfs in bytes (`1Gi` broke the mount and `1m,suid,dev` reached its
options), and enforced for disk-backed emptyDirs by eviction, as the kubelet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent import volumes
from agent.eviction import local_storage
from agent.eviction.manager import EvictionManager
from agent.eviction.ranking import PodUsage
from agent.eviction.thresholds import parse_config
from agent.pod_config import ConfigError
from controlplane.api.checks import Errors
from controlplane.api.kinds.shared import podspec
from machinery import libc
from tests.unit.agent.test_volumes import SRC, make_pod


def spec_errors(source: dict[str, Any]) -> list[str]:
    e = Errors()
    podspec.validate(e, "spec", {"volumes": [{"name": "v", "emptyDir": source}],
                                  "containers": [{"name": "c", "image": "i"}]})  # fmt: skip
    return [i for i in e.items if "emptyDir" in i]


def test_the_api_server_checks_the_size_limit() -> None:
    assert spec_errors({"sizeLimit": "1Gi"}) == []
    assert spec_errors({"medium": "Memory", "sizeLimit": "64Mi"}) == []
    [bad] = spec_errors({"sizeLimit": "1m,suid,dev"})
    assert bad.startswith("spec.volumes[0].emptyDir.sizeLimit: ")
    assert spec_errors({"sizeLimit": "0"}) == [
        "spec.volumes[0].emptyDir.sizeLimit: Invalid value: '0': must be greater than zero"
    ]


def test_tmpfs_gets_the_size_in_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mounts: list[tuple[str | None, str, str | None, int, str | None]] = []

    def mount(source: str | None, target: str, fstype: str | None, flags: int = 0,
              data: str | None = None) -> None:  # fmt: skip
        mounts.append((source, target, fstype, flags, data))

    monkeypatch.setattr(libc, "mount", mount)
    pod = make_pod({"name": "m", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}})
    volumes.setup_volumes(tmp_path, pod, SRC)
    [(source, _, fstype, _, data)] = mounts
    assert (source, fstype, data) == ("tmpfs", "tmpfs", "size=1073741824")
    bad = make_pod({"name": "m", "emptyDir": {"medium": "Memory", "sizeLimit": "1m,suid,dev"}})
    with pytest.raises(ConfigError, match=r"emptyDir\.sizeLimit"):
        volumes.setup_volumes(tmp_path / "b", bad, SRC)
    assert len(mounts) == 1


def test_a_disk_backed_empty_dir_past_its_limit_is_evicted(tmp_path: Path) -> None:
    pod = make_pod({"name": "cache", "emptyDir": {"sizeLimit": "1Ki"}},
                   {"name": "ram", "emptyDir": {"medium": "Memory", "sizeLimit": "1Ki"}})  # fmt: skip
    [(name, path, limit, written)] = volumes.empty_dir_limits(tmp_path, pod)
    assert (name, limit, written) == ("cache", 1024, "1Ki")
    path.mkdir(parents=True)
    usage = PodUsage("uid-1", pod=pod)
    assert local_storage.violations([usage], tmp_path) == []
    (path / "big").write_bytes(b"x" * 64 * 1024)
    found = local_storage.violations([usage], tmp_path)
    assert found == [(usage, 'Usage of EmptyDir volume "cache" exceeds the limit "1Ki". ')]
    evicted: list[tuple[str, str, int]] = []

    def evict(v: PodUsage, m: str, g: int) -> bool:
        evicted.append((v.uid, m, g))
        return True

    manager = EvictionManager(
        parse_config(hard="memory.available<1Mi"), lambda: {}, lambda: [usage], evict,
        local_storage=lambda: local_storage.violations([usage], tmp_path),
    )  # fmt: skip
    assert manager.synchronize() == ["uid-1"]
    assert evicted == [("uid-1", 'Usage of EmptyDir volume "cache" exceeds the limit "1Ki". ', 0)]
