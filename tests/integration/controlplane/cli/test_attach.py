"""skiffctl attach against the runtime's streaming server through the agent's proxy.

The "container" is a host process of the host-process backend started with
stdin open (stdin_once), so what skiffctl sends reaches it and its output
comes back; the stack is tests/fakes/stream_stack.py's.
"""

from __future__ import annotations

from tests.fakes.stream_stack import Stack, make_pod


def test_attach_stdin_and_output(stack: Stack) -> None:
    stack.backend.add_container("att", ["sh", "-c", "read line; echo got $line; echo e >&2"])
    stack.runtime.cid = "att"
    make_pod(stack.ctl, "box", stdin=True, stdinOnce=True)
    r = stack.ctl("attach", "-i", "box", stdin="hello\n")
    assert r.code == 0, r.err
    assert r.out == "got hello\n" and r.err == "e\n"
    request = stack.runtime.calls[-1]
    assert request.container_id == "att" and request.stdin and request.stdout and request.stderr


def test_attach_refusals(stack: Stack) -> None:
    r = stack.ctl("attach", "-i", "web")
    assert r.code == 1 and "not created with stdin" in r.err
    r = stack.ctl("attach", "-t", "web")  # no tty in the spec: a warning, then plain attach
    assert "did not allocate one" in r.err
    stack.backend.stopped.add("c1")
    r = stack.ctl("attach", "web")
    assert r.code == 1 and "is not running" in r.err
