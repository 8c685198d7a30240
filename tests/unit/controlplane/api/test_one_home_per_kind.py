"""One home per kind (issue 27 item 2): the generic machinery reads the kinds'
definitions and names no kind itself, so adding a kind is one module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from controlplane.api import kinds

ROOT = Path(__file__).resolve().parents[4]

# What reads the definitions: none of it may single out a kind by name.
GENERIC = (
    "controlplane/api/validation.py",
    "controlplane/api/defaults.py",
    "controlplane/api/columns.py",
    "controlplane/api/patch_meta.py",
    "controlplane/api/pruning.py",
    "controlplane/api/openapi.py",
    "controlplane/api/openapi_doc.py",
    "controlplane/api/schema.py",
    "controlplane/api/kinds/definition.py",
    "controlplane/apiserver/admission.py",
    "controlplane/apiserver/tables.py",
    "controlplane/apiserver/rest/conversion.py",
    "controlplane/apiserver/rest/discovery.py",
    "controlplane/apiserver/rest/paths.py",
)


def _strings(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    return {
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


@pytest.mark.parametrize("module", GENERIC)
def test_generic_machinery_names_no_kind(module: str) -> None:
    names = {d.key for d in kinds.builtin_definitions()} | {
        d.info.kind for d in kinds.builtin_definitions()
    }
    assert not _strings(ROOT / module) & names
