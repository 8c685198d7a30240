"""tests/harness/untar.py: on a Python without tarfile's filters (Debian
bookworm's 3.11.2) the members are checked as the "data" filter checks them:
files and directories land, anything reaching outside or special is refused
before anything is written."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from tests.harness import untar


def archive(*members: tuple[tarfile.TarInfo, bytes]) -> tarfile.TarFile:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for info, data in members:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data else None)
    buf.seek(0)
    return tarfile.open(fileobj=buf)


def member(
    name: str, kind: bytes = tarfile.REGTYPE, link: str = "", mode: int = 0o644
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, mode
    return info


@pytest.fixture(params=["filter", "checked"])
def without_filters(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "checked":
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    elif not hasattr(tarfile, "data_filter"):
        pytest.skip("this Python's tarfile has no filters (before 3.11.4)")
    return str(request.param)


def test_files_and_directories_land_without_set_id_bits(
    tmp_path: Path, without_filters: str
) -> None:
    tar = archive((member("d", tarfile.DIRTYPE, mode=0o755), b""),
                  (member("d/f", mode=0o4777), b"body"),
                  (member("d/l", tarfile.SYMTYPE, link="f"), b""),
                  (member("/abs"), b"inside"))  # fmt: skip
    untar.extract_data(tar, tmp_path / "out")
    assert (tmp_path / "out/d/f").read_bytes() == b"body"
    assert (tmp_path / "out/d/f").stat().st_mode & 0o7022 == 0
    assert (tmp_path / "out/d/l").read_bytes() == b"body"
    assert (tmp_path / "out/abs").read_bytes() == b"inside"  # a leading / is dropped


@pytest.mark.parametrize("bad", [
    member("../escape"),
    member("l", tarfile.SYMTYPE, link="../../etc/passwd"),
    member("h", tarfile.LNKTYPE, link="../outside"),
    member("dev", tarfile.CHRTYPE),
])  # fmt: skip
def test_members_reaching_outside_or_special_are_refused(
    tmp_path: Path, without_filters: str, bad: tarfile.TarInfo
) -> None:
    tar = archive((member("ok"), b"x"), (bad, b""))
    with pytest.raises(tarfile.TarError):
        untar.extract_data(tar, tmp_path / "out")
    assert not (tmp_path / "escape").exists() and not (tmp_path / "outside").exists()
    if without_filters == "checked":
        assert not (tmp_path / "out/ok").exists()  # checked before anything is written
