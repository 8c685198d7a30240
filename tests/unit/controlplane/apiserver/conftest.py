"""Shared fixtures of the API server's unit tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane.apiserver.admission import default_plugins
from controlplane.apiserver.registry import Registry
from controlplane.storage.sqlite import SqliteStore


@pytest.fixture
def reg(tmp_path: Path) -> Iterator[Registry]:
    """A registry on a SQLite store in tmp_path, with the default admission
    plugins and the `default` namespace."""
    store = SqliteStore(tmp_path / "state.db")
    registry = Registry(store)
    registry.plugins = default_plugins()
    registry.create("Namespace", {"metadata": {"name": "default"}})
    yield registry
    store.close()
