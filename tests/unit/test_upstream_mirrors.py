"""tests/harness/upstream.py: files read from a git mirror by tag, the skips
naming SKIFF_UPSTREAM_MIRRORS when the mirror, tag or path is missing, and
documents selected by kind and name unchanged."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.harness import upstream

MANIFEST = """\
# a comment kept with its document
apiVersion: v1
kind: Service
metadata:
  name: a
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b}
---
"""


@pytest.fixture
def mirrors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "deploy.yaml").write_text(MANIFEST)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}  # fmt: skip
    git_dir = tmp_path / "mirrors" / "owner+name" / "repo"
    for args in (["init", "-q", "--bare", str(git_dir)],
                 ["--git-dir", str(git_dir), "--work-tree", str(work), "add", "deploy.yaml"],
                 ["--git-dir", str(git_dir), "--work-tree", str(work), "commit", "-qm", "x"],
                 ["--git-dir", str(git_dir), "tag", "v1"]):  # fmt: skip
        subprocess.run(["git", *args], check=True, env=env, capture_output=True)
    monkeypatch.setenv(upstream.ENV, str(tmp_path / "mirrors"))
    return tmp_path / "mirrors"


def test_show_reads_the_file_at_its_tag(mirrors: Path) -> None:
    assert upstream.show("owner/name", "v1", "deploy.yaml") == MANIFEST


def test_tree_writes_the_directory(mirrors: Path, tmp_path: Path) -> None:
    out = upstream.tree("owner/name", "v1", "deploy.yaml", tmp_path / "out")
    assert out.read_text() == MANIFEST


@pytest.mark.parametrize(("repo", "tag", "says"), [
    ("other/repo", "v1", "no git mirror of other/repo in SKIFF_UPSTREAM_MIRRORS="),
    ("owner/name", "v9", "no v9:deploy.yaml in the owner/name mirror of SKIFF_UPSTREAM_MIRRORS"),
])  # fmt: skip
def test_missing_mirror_or_tag_skips_naming_the_variable(
    mirrors: Path, repo: str, tag: str, says: str
) -> None:
    with pytest.raises(pytest.skip.Exception, match=says):
        upstream.show(repo, tag, "deploy.yaml")


def test_no_mirrors_at_all_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(upstream.ENV, raising=False)
    monkeypatch.setattr(upstream, "DEFAULT", Path("/nonexistent-mirrors"))
    with pytest.raises(pytest.skip.Exception, match="set SKIFF_UPSTREAM_MIRRORS"):
        upstream.show("owner/name", "v1", "deploy.yaml")


def test_select_keeps_the_wanted_documents_unchanged() -> None:
    kept = upstream.select(MANIFEST, {("Service", "a")})
    assert kept == "---\n" + MANIFEST.split("---\n")[0]
    assert upstream.select(MANIFEST, None).count("---\n") == 2
    with pytest.raises(AssertionError, match="Secret"):
        upstream.select(MANIFEST, {("Secret", "c")})
