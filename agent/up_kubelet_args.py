"""`skiff up --kubelet-arg FLAG=VALUE`: a flag passed on to skiff up's agent,
as k3s passes `--kubelet-arg` on to its kubelet (eviction thresholds, sync
periods, reserved resources...).

The flag must be one `skiff agent` has, and not one skiff up sets itself
(the names of its data directory, sockets and networks): those would split
the host state skiff up keeps from what its agent uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from agent import main as agent_main


def agent_flags(values: Iterable[str], owned: Sequence[str]) -> list[str]:
    """`--FLAG=VALUE` for each `FLAG=VALUE` (ValueError naming the bad one).
    `owned`: the agent flags skiff up sets, which may not be given."""
    known = agent_main.build_parser()._option_string_actions
    out = []
    for value in values:
        name, sep, setting = value.partition("=")
        flag = "--" + name.strip().lstrip("-")
        if not sep or flag == "--":
            raise ValueError(
                f"--kubelet-arg {value!r}: want FLAG=VALUE, as eviction-hard=memory.available<100Mi"
            )
        if flag not in known:
            raise ValueError(f"--kubelet-arg {value!r}: skiff agent has no flag {flag}")
        if flag in owned:
            raise ValueError(f"--kubelet-arg {value!r}: skiff up sets {flag} itself")
        out.append(f"{flag}={setting}")
    return out
