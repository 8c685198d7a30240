"""schema.declare: a table of types reads as the same Types struct() and
kind() build from keyword arguments (order, required fields, standard
descriptions, continuation lines), and a malformed table is refused."""

from __future__ import annotations

import pytest

from controlplane.api.schema import LIST_META, SPEC, STATUS, declare, kind, struct


def test_a_table_reads_as_struct_and_kind() -> None:
    types = declare(
        "io.example.v1",
        """
        Widget [example.io/v1 Widget]: Widget is a thing
                that is described on two lines.
            spec    WidgetSpec
            status  object
        WidgetSpec: WidgetSpec is what a Widget should be.
            size       integer  How big.
            name!      string   What it is called, on a line that is
                                continued.
            parts!     []Part   Its parts.
            labels     map      Its labels.
        Part: A part.
        """,
    )
    assert list(types) == ["Widget", "WidgetSpec", "Part"]
    widget = kind(
        "io.example.v1",
        "Widget is a thing that is described on two lines.",
        ("example.io", "v1", "Widget"),
        spec=("WidgetSpec", SPEC),
        status=("object", STATUS),
    )
    spec = struct(
        "io.example.v1",
        "WidgetSpec is what a Widget should be.",
        ("name", "parts"),
        size=("integer", "How big."),
        name=("string", "What it is called, on a line that is continued."),
        parts=("[]Part", "Its parts."),
        labels=("map", "Its labels."),
    )
    assert types["Widget"] == widget
    assert list(types["Widget"].fields.items()) == list(widget.fields.items())
    assert types["WidgetSpec"] == spec
    assert list(types["WidgetSpec"].fields.items()) == list(spec.fields.items())
    assert types["Part"] == struct("io.example.v1", "A part.")


def test_core_group_and_standard_metadata_description() -> None:
    types = declare(
        "io.k8s.api.core.v1",
        """
        ThingList [v1 ThingList]: A list.
            metadata  ListMeta
        """,
    )
    t = types["ThingList"]
    assert t.kinds == (("", "v1", "ThingList"),)
    assert t.fields["metadata"] == ("ListMeta", LIST_META)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("Thing: x\n  size integer Odd indentation.", "bad indentation"),
        ("Thing [apps/v1]: no kind name", "bad header"),
        ("Thing x", "bad header"),
        ("Thing: x\n    size  integer", "a field needs"),
        ("Thing: x\n    size", "a field needs"),
        ("    size  integer  A field of no type.\nThing: x", "a field needs"),
    ],
)
def test_a_malformed_table_is_refused(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        declare("p", text)
