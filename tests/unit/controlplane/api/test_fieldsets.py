"""fieldsets.edited: a FieldsV1 document with a write's changes edited in."""

from __future__ import annotations

import copy
import random

from controlplane.api.fieldsets import Path, edited, to_fields_v1

ELEMENTS = ["f:a", "f:b", "f:c", 'k:{"name":"x"}', "v:1"]


def test_edited_is_the_rendered_set_and_leaves_its_source_alone() -> None:
    rng = random.Random(19)

    def path() -> Path:
        return tuple(rng.choice(ELEMENTS) for _ in range(rng.randint(1, 4)))

    for _ in range(500):
        listed = {path() for _ in range(rng.randint(0, 8))}
        removed = {path() for _ in range(rng.randint(0, 3))}
        removed |= set(rng.sample(sorted(listed), min(len(listed), rng.randint(0, 3))))
        added = {path() for _ in range(rng.randint(0, 3))}
        doc = to_fields_v1(listed)
        before = copy.deepcopy(doc)
        out = edited(doc, removed, added)
        assert out == to_fields_v1((listed - removed) | added), (listed, removed, added)
        assert doc == before  # only the edited paths were copied
