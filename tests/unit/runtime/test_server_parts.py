"""`skiff runtime` wires in all of its parts or refuses to start (issue 27
item 4): a part that fails to import is an error, never a runtime silently
without images, networking or streaming; and the shipped command has no
test-only flag (tests run it through tests/fakes/image_store.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from runtime import config, server


@pytest.mark.parametrize(
    ("module", "build"),
    [
        ("runtime.image", lambda cfg: server.build_images(cfg)),
        ("runtime.network.cni_client", lambda cfg: server.build_network(cfg)),
    ],
)
def test_a_part_that_fails_to_import_is_an_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, module: str, build: object
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # importing it raises ImportError
    cfg = config.from_args(["--root", str(tmp_path / "r"), "--state", str(tmp_path / "s")])
    with pytest.raises(ImportError):
        build(cfg)  # type: ignore[operator]


def test_streaming_that_fails_to_import_fails_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "runtime.streaming", None)
    lazy = server.LazyStreaming(object())  # type: ignore[arg-type]
    with pytest.raises(ImportError):
        lazy.get_exec(None)


def test_no_test_only_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        config.from_args(["--image-store-factory", "tests.fakes.image_store:factory"])
    assert "unrecognized arguments: --image-store-factory" in capsys.readouterr().err
