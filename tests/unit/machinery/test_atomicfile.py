"""The one atomic writer and the one credential writer: a file is replaced
whole with the mode asked for, no temporary is left behind, a planted
symlink or stale file at a temporary name is never written through, and a
credential is 0600 from creation whatever the umask (issue 17)."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from machinery.atomicfile import (
    copy_private,
    move_aside,
    publish,
    swap_symlink,
    write_atomic,
    write_private,
)


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0)
    yield
    os.umask(old)


@pytest.mark.parametrize("durable", [True, False])
def test_replaces_the_file_whole(tmp_path: Path, durable: bool) -> None:
    target = tmp_path / "index.json"
    target.write_text("old contents, longer than the new")
    write_atomic(target, "new", durable=durable, mode=0o600)
    assert target.read_text() == "new"
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.json"]


def test_takes_str_paths_and_bytes(tmp_path: Path) -> None:
    target = str(tmp_path / "last_reserved_ip.0")
    write_atomic(target, b"10.0.0.2", durable=True)
    write_atomic(target, b"10.0.0.3", durable=True)
    assert Path(target).read_bytes() == b"10.0.0.3"
    assert os.listdir(tmp_path) == ["last_reserved_ip.0"]


def test_a_planted_symlink_at_the_temporary_name(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("untouched")
    (tmp_path / "f.tmp").symlink_to(elsewhere)
    with pytest.raises(OSError):
        write_atomic(tmp_path / "f", b"\x00data", durable=True)
    assert elsewhere.read_text() == "untouched"


def test_private_is_0600_atomically_with_no_temporary_left(
    tmp_path: Path, open_umask: object
) -> None:
    path = tmp_path / "node.conf"
    path.write_text("old")
    os.chmod(path, 0o644)
    write_private(path, "token: new\n")
    assert path.read_text() == "token: new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["node.conf"]
    copy_private(path, tmp_path / "admin.conf")
    assert stat.S_IMODE((tmp_path / "admin.conf").stat().st_mode) == 0o600
    assert (tmp_path / "admin.conf").read_text() == "token: new\n"


def test_private_makes_its_directory_0700(tmp_path: Path, open_umask: object) -> None:
    write_private(tmp_path / "a" / "b" / "token", b"x")
    assert stat.S_IMODE((tmp_path / "a" / "b").stat().st_mode) == 0o700
    assert (tmp_path / "a" / "b" / "token").read_bytes() == b"x"


def test_a_failed_private_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "join-token"
    path.write_text("old\n")
    with pytest.raises(TypeError):
        write_private(path, 5)  # type: ignore[arg-type]
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["join-token"]


def test_publish_never_replaces_a_published_directory(tmp_path: Path) -> None:
    first, second = tmp_path / "tmp-1", tmp_path / "tmp-2"
    for d in (first, second):
        d.mkdir()
        (d / "layer.json").write_text(d.name)
    publish(first, tmp_path / "layer")
    with pytest.raises(OSError):
        publish(second, tmp_path / "layer")
    assert (tmp_path / "layer" / "layer.json").read_text() == "tmp-1"
    move_aside(tmp_path / "layer", tmp_path / "trash")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp-2", "trash"]


def test_swap_symlink_retargets_in_one_step(tmp_path: Path) -> None:
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    swap_symlink(tmp_path / "..data", "v1")
    swap_symlink(tmp_path / "..data", "v2")
    assert os.readlink(tmp_path / "..data") == "v2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["..data", "v1", "v2"]


def test_threads_writing_one_file_at_once_all_succeed(tmp_path: Path) -> None:
    """Two writers of one path shared `<name>.tmp`, so one rename found it
    gone (an agent writing its CNI config from two events at once exited)."""
    target = tmp_path / "10-skiff.conflist"
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(50):
                write_atomic(target, f"{n}-{i}", durable=False)
        except BaseException as err:  # recorded for the assertion below
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert target.read_text().endswith("-49")
