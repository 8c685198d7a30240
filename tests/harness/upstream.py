"""Upstream files the tests apply, read at run time from git mirrors, never
committed (the project's rule: nothing fetched goes into a commit).

    SKIFF_UPSTREAM_MIRRORS   a directory of git mirrors named owner+name, as
                             the `fetch` tool makes them (owner+name/repo, or
                             owner+name itself a git directory); default
                             /work/.mirror when it exists

A test asks for a file at a tag (`show`) or a directory (`tree`); when the
mirror, the tag or the path is missing it skips, naming the variable and
what was missing.
"""

from __future__ import annotations

import functools
import io
import os
import re
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness.untar import extract_data

ENV = "SKIFF_UPSTREAM_MIRRORS"
DEFAULT = Path("/work/.mirror")


def mirrors() -> Path | None:
    """The directory of mirrors, or None when there is none."""
    given = os.environ.get(ENV)
    if given:
        return Path(given)
    return DEFAULT if DEFAULT.is_dir() else None


def git_dir(repo: str) -> Path:
    """The git directory of `owner/name`; skips the test without one."""
    root = mirrors()
    if root is None:
        pytest.skip(f"set {ENV} to a directory of git mirrors (owner+name) to read {repo}")
    base = root / repo.replace("/", "+")
    for candidate in (base / "repo", base):
        if (candidate / "HEAD").is_file():
            return candidate
    pytest.skip(f"no git mirror of {repo} in {ENV}={root} (looked for {base})")


def _git(repo: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "--git-dir", str(git_dir(repo)), *args],
                          capture_output=True, check=False)  # fmt: skip


def show(repo: str, tag: str, path: str) -> str:
    """The text of `path` at `tag` in `repo`; skips when either is missing."""
    done = _git(repo, "show", f"{tag}:{path}")
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace").strip()
        pytest.skip(f"no {tag}:{path} in the {repo} mirror of {ENV}: {err}")
    return done.stdout.decode()


def tree(repo: str, tag: str, path: str, into: Path) -> Path:
    """`path` (a directory) at `tag`, written under `into`; its local path."""
    done = _git(repo, "archive", "--format=tar", tag, path)
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace").strip()
        pytest.skip(f"no {tag}:{path} in the {repo} mirror of {ENV}: {err}")
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        extract_data(tar, into)
    return into / path


_SEPARATOR = re.compile(r"^---[ \t]*$", re.MULTILINE)


# libyaml's parser: the same documents as PyYAML's safe_load, in a seventh of
# the CPU (an operator's install manifest is up to 2 MB: 6 s in pure Python).
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def documents(text: str) -> list[tuple[dict[str, Any], str]]:
    """The YAML documents of a manifest: each parsed, beside its own text
    (shared by every caller of the same text: read them, never change them)."""
    return list(_parsed(text))


# An operator's manifest is parsed once, not once per test that applies it
# (client-side, server-side, whole: a third of the module's own CPU went here).
@functools.lru_cache(maxsize=16)
def _parsed(text: str) -> tuple[tuple[dict[str, Any], str], ...]:
    found = []
    for chunk in _SEPARATOR.split(text):
        doc = yaml.load(chunk, Loader=_Loader)
        if isinstance(doc, dict):
            found.append((doc, chunk.strip("\n")))
    return tuple(found)


def select(text: str, wanted: set[tuple[str, str]] | None) -> str:
    """The documents of `text` whose (kind, metadata.name) is in `wanted` (all
    of them for None), unchanged, in their order; every wanted one must be there."""
    kept, seen = [], set()
    for doc, raw in documents(text):
        key = (doc.get("kind", ""), (doc.get("metadata") or {}).get("name", ""))
        if wanted is None or key in wanted:
            kept.append(raw)
            seen.add(key)
    missing = (wanted or set()) - seen
    assert not missing, f"not in the upstream file: {sorted(missing)}"
    return "".join(f"---\n{raw}\n" for raw in kept)
