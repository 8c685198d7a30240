"""skiffctl exec: run a command in a container, through the API server.

`exec [-i] [-t] [-q] POD|TYPE/NAME [-c CONTAINER] -- COMMAND [ARG...]`.
The pod is found as `logs` finds it; the API server's pods/exec subresource
(`POST /api/v1/namespaces/<ns>/pods/<pod>/exec?command=..&container=..`,
with skiffctl's bearer token) is upgraded to SPDY/3.1 and spoken to by
controlplane/cli/streamclient.py. The API server authorizes the call and
relays it to the node's agent with its own certificate; skiffctl never
dials an agent. With -t on a real terminal the
terminal is put in raw mode (and restored on every way out) and window
size changes (SIGWINCH) are sent as resize events; -t without a terminal
on stdin is dropped with kubectl's warning. skiffctl exits with the
command's exit code, after printing `command terminated with exit code N`
on stderr as kubectl does.

`resolve` and `dial` are shared with `attach` and `port-forward`,
`remote_command` with `attach`. This module never imports the agent or the runtime.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TextIO

from controlplane.cli import printers
from controlplane.cli.context import CliError, Context
from controlplane.cli.logs import api_config, choose
from controlplane.cli.streamclient import (
    CONNECT_TIMEOUT,
    CommandIO,
    Upgraded,
    UpgradeRefused,
    command_path,
    run_remote_command,
    upgrade,
)
from controlplane.client import apirest, errors
from controlplane.client.config import ClientConfig
from controlplane.client.interface import Object
from machinery.streaming.remotecommand import SPDY_PROTOCOLS

NO_TTY_WARNING = "Unable to use a TTY - input is not a terminal or the right kind of file"


def _flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-c", "--container", default="", help="container name")
    parser.add_argument("-i", "--stdin", action="store_true", help="pass stdin to the container")
    parser.add_argument("-t", "--tty", action="store_true", help="stdin is a TTY")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only remote output")


def register(parser: argparse.ArgumentParser) -> None:
    _flags(parser)
    parser.add_argument("words", nargs=argparse.REMAINDER, metavar="POD -- COMMAND [ARG...]")


def split_words(args: argparse.Namespace) -> tuple[str, list[str]]:
    """POD and COMMAND from what followed the first positional.

    Flags after POD (before `--`) are applied to `args` as if given first."""
    words = list(args.words)
    head, command = (
        (words[: words.index("--")], words[words.index("--") + 1 :])
        if "--" in words
        else (words, [])
    )
    late = argparse.ArgumentParser(add_help=False)
    _flags(late)
    late.add_argument("rest", nargs="*")
    parsed, unknown = late.parse_known_args(head)
    if unknown:
        raise CliError(f"unknown flag(s): {' '.join(unknown)}")
    for name in ("stdin", "tty", "quiet"):
        if getattr(parsed, name):
            setattr(args, name, True)
    if parsed.container:
        args.container = parsed.container
    if not parsed.rest:
        raise CliError("a pod name is required: exec POD -- COMMAND [ARG...]")
    pod, *legacy = parsed.rest
    return pod, legacy + command


# ---- shared with attach and port-forward -----------------------------------------------


@dataclass(frozen=True)
class Resolved:
    pod: Object
    namespace: str
    name: str
    container: str
    config: ClientConfig  # the API server and skiffctl's credential


def resolve(ctx: Context, target: str, container: str, need_container: bool = True) -> Resolved:
    """The running pod named by `target`, its container, and its node's agent."""
    chosen = choose(ctx, [target], container)
    pod = chosen.pod
    name = printers.name(pod)
    phase = printers.status(pod).get("phase") or "Pending"
    if phase != "Running":
        raise CliError(f'pod "{name}" is not running (phase {phase})')
    names = [str(c.get("name")) for c in printers.spec(pod).get("containers") or []]
    picked = chosen.container or (names[0] if names else "")
    if need_container and picked not in names:
        raise CliError(f"container {picked} is not valid for pod {name}")
    namespace = str(printers.meta(pod).get("namespace") or "default")
    return Resolved(pod, namespace, name, picked, api_config(ctx))


def dial(where: Resolved, path: str, protocols: tuple[str, ...]) -> Upgraded:
    """The API server's `path` upgraded to one of `protocols`; a refusal or
    an unreachable server is a CliError in kubectl's words."""
    config = where.config
    try:
        return upgrade(
            config.server,
            path,
            config.token,
            protocols,
            connect=lambda: apirest.open_socket(config, CONNECT_TIMEOUT),
        )
    except UpgradeRefused as err:
        message = apirest.failure(err.status, err.body.encode())
        if isinstance(message, errors.Unauthenticated):
            raise CliError(
                f"You must be logged in to the server (Unauthorized): {message}"
            ) from None
        if isinstance(message, errors.Forbidden):
            raise CliError(f"Error from server (Forbidden): {message}") from None
        raise CliError(f"unable to upgrade connection: {message}") from None
    except (OSError, errors.ApiError) as err:
        raise CliError(f"cannot reach the API server at {config.server}: {err}") from None


def _writer(stream: TextIO) -> Callable[[bytes], None]:
    """Bytes to `stream`: as they are where it has a byte buffer, else decoded."""
    buffer = getattr(stream, "buffer", None)

    def write(data: bytes) -> None:
        if buffer is not None:
            buffer.write(data)
            buffer.flush()
        else:
            stream.write(data.decode(errors="replace"))
            stream.flush()

    return write


def _fileno(stream: TextIO) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def _reader(stream: TextIO) -> Callable[[], bytes]:
    fd = _fileno(stream)
    if fd is not None:
        return lambda: os.read(fd, 32768)
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        return lambda: bytes(buffer.read1(32768))
    return lambda: stream.read(32768).encode()


def _terminal_size(ctx: Context) -> tuple[int, int] | None:
    for stream in (ctx.stdout, ctx.stdin):
        fd = _fileno(stream)
        if fd is not None and os.isatty(fd):
            size = os.get_terminal_size(fd)
            return size.columns, size.lines
    return None


def use_tty(ctx: Context, wanted: bool) -> bool:
    """-t works only with a terminal on stdin, as kubectl decides."""
    if not wanted:
        return False
    fd = _fileno(ctx.stdin)
    if fd is None or not os.isatty(fd):
        ctx.err(NO_TTY_WARNING)
        return False
    return True


@contextlib.contextmanager
def local_io(ctx: Context, *, stdin: bool, tty: bool) -> Iterator[CommandIO]:
    """The local ends of a remote command; a raw terminal and SIGWINCH with `tty`."""
    io = CommandIO(
        read_stdin=_reader(ctx.stdin) if stdin else None,
        write_stdout=_writer(ctx.stdout),
        write_stderr=None if tty else _writer(ctx.stderr),
    )
    if not tty:
        yield io
        return
    size = _terminal_size(ctx)
    if size is not None:
        io.sizes.put(size)
    fd = _fileno(ctx.stdin)
    restore: Callable[[], None] = lambda: None  # noqa: E731
    if fd is not None and os.isatty(fd):
        import termios
        import tty as ttymod

        saved = termios.tcgetattr(fd)
        ttymod.setraw(fd)
        restore = lambda: termios.tcsetattr(fd, termios.TCSADRAIN, saved)  # noqa: E731
    previous = None
    in_main = threading.current_thread() is threading.main_thread()
    if in_main:

        def on_winch(_sig: int, _frame: object) -> None:
            new = _terminal_size(ctx)
            if new is not None:
                io.sizes.put_nowait(new)

        previous = signal.signal(signal.SIGWINCH, on_winch)
    try:
        yield io
    finally:
        restore()
        if in_main:
            signal.signal(signal.SIGWINCH, previous)


def finish(ctx: Context, code: int | None, message: str) -> int:
    """What skiffctl prints and exits with for a finished remote command."""
    if code is None:
        ctx.err(f"error: {message}")
        return 1
    if code:
        ctx.err(f"command terminated with exit code {code}")
    return code


def remote_command(
    ctx: Context,
    where: Resolved,
    verb: str,
    command: list[str],
    *,
    stdin: bool,
    tty: bool,
    prompt: str = "",
) -> int:
    """Run `verb` (exec or attach) on the resolved container with the
    local terminal's streams; the command's exit code. `prompt` is said on
    stderr once connected."""
    path = command_path(
        verb,
        where.namespace,
        where.name,
        where.container,
        command,
        stdin=stdin,
        stdout=True,
        stderr=not tty,
        tty=tty,
    )
    conn = dial(where, path, SPDY_PROTOCOLS)
    if prompt:
        ctx.err(prompt)
    with local_io(ctx, stdin=stdin, tty=tty) as io:
        result = run_remote_command(conn, io, tty=tty)
    return finish(ctx, result.exit_code, result.message)


def run(ctx: Context) -> int:
    args = ctx.args
    pod, command = split_words(args)
    if not command:
        raise CliError("you must specify at least one command for the container")
    where = resolve(ctx, pod, args.container)
    tty = use_tty(ctx, args.tty)
    return remote_command(ctx, where, "exec", command, stdin=args.stdin, tty=tty)
