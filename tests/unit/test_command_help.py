"""Every `skiff COMMAND --help` prints its help and exits 0. argparse
formats each flag's help with %, so a default written into it such as
`nodefs.available<10%` made `skiff agent --help` fail with a ValueError."""

from __future__ import annotations

import contextlib
import io

import pytest

import skiff


@pytest.mark.parametrize("command", sorted(skiff.SUBCOMMANDS))
def test_every_command_prints_its_help(command: str) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            code = skiff.main([command, "--help"])
        except SystemExit as done:  # argparse's own --help exits
            code = done.code  # type: ignore[assignment]
    assert code in (0, None), command
    assert "usage:" in out.getvalue() and "--help" in out.getvalue()
