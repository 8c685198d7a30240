"""Hypothesis's caches in a directory of the machine, its example database
where it was (tests/harness/hypothesis_home.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import configuration, settings
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.internal.constants_ast import constants_from_module

from tests.harness import hypothesis_home


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """The profile and home of the moment given back afterwards; the test in
    an empty current directory whose .hypothesis is Hypothesis's home, the
    machine's cache at ./machine."""
    profile = settings.get_current_profile_name()
    ours = settings._profiles.get(hypothesis_home.PROFILE)  # re-registered by configure()
    before = configuration.storage_directory(intent_to_write=False).path
    monkeypatch.delenv("HYPOTHESIS_STORAGE_DIRECTORY", raising=False)
    monkeypatch.setenv(hypothesis_home.ENV, str(tmp_path / "machine"))
    monkeypatch.chdir(tmp_path)
    configuration.set_hypothesis_home_dir(tmp_path / ".hypothesis")
    try:
        yield tmp_path
    finally:
        if ours is not None:
            settings.register_profile(hypothesis_home.PROFILE, parent=ours)
        settings.load_profile(profile)
        configuration.set_hypothesis_home_dir(before)


def _active() -> settings:
    active = settings.default
    assert active is not None
    return active


def test_the_caches_move_to_the_machines_directory_and_the_examples_stay(home: Path) -> None:
    settings.load_profile("default")
    assert hypothesis_home.configure() == home / "machine"
    assert configuration.storage_directory("constants").path == home / "machine" / "constants"
    examples = _active().database
    assert isinstance(examples, DirectoryBasedExampleDatabase)
    assert Path(examples.path) == home / ".hypothesis" / "examples"


def test_the_ci_profile_keeps_no_example_database(home: Path) -> None:
    settings.load_profile("ci")
    assert hypothesis_home.configure() == home / "machine"
    assert _active().database is None
    assert _active().derandomize  # the rest of the profile as it was


def test_a_modules_constants_are_cached_in_the_machines_directory(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.load_profile("default")
    hypothesis_home.configure()
    (home / "skiffprobe_mod.py").write_text("WORD = 'skiff-probe-77'\n")
    monkeypatch.syspath_prepend(str(home))
    try:
        module = __import__("skiffprobe_mod")
        assert "skiff-probe-77" in constants_from_module(module)
    finally:
        sys.modules.pop("skiffprobe_mod", None)
    written = [p.read_text() for p in (home / "machine" / "constants").iterdir()]
    assert any("skiff-probe-77" in text for text in written), written
    assert not (home / ".hypothesis" / "constants").exists()


def test_an_explicit_storage_directory_is_left_alone(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYPOTHESIS_STORAGE_DIRECTORY", str(home / "mine"))
    profile = settings.get_current_profile_name()
    assert hypothesis_home.configure() is None
    assert settings.get_current_profile_name() == profile
    assert configuration.storage_directory("constants").path == home / ".hypothesis" / "constants"
