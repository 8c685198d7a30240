"""One function call in a short-lived child process, so that what it imports
never loads into the long-lived caller.

`skiff up` runs for months; a library it needs only at start or now and
then (`cryptography` for making keys, certificates and signing requests,
about 9 MB a process) would stay in its memory for good once imported. The
caller runs such work through `call(module, function, **arguments)`
instead: a child `python -I` with this tree first on its path imports
`module`, calls `function(**arguments)` and prints its result; the
arguments and the result are JSON (PEM as text, files by path), so the
interface stays as narrow as the function's own. A ValueError the function
raises comes back as a ValueError with its message; any other failure as a
ChildError with the child's last words.

The child is there only to keep an import out of the caller. Where the
caller has loaded it already (`unless_loaded`: a test process, or `skiff up`
once its first service-account token brought `cryptography` in), a child
buys nothing and costs a process start (about 0.13 CPU-s), so the call runs
in this process, with the same JSON round trip and the same errors.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
# -I: no user site, no PYTHON* variables, no script dir or cwd on sys.path;
# this tree goes first, as the runtime's zygote does.
MAIN = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from machinery.inchild import main; sys.exit(main(sys.argv[2:]))"
)
VALUE_ERROR = 3  # the child's exit code for a ValueError (its message on stdout)


class ChildError(RuntimeError):
    """The child failed otherwise than with a ValueError."""


def call(
    module: str, function: str, timeout: float = 120.0, unless_loaded: str = "", **arguments: Any
) -> Any:
    """`module.function(**arguments)` run in a child process; its result. In
    this process instead when the module named `unless_loaded` is loaded."""
    if unless_loaded and unless_loaded in sys.modules:
        return _call_here(module, function, arguments)
    argv = [sys.executable, "-I", "-c", MAIN, str(PACKAGE_ROOT), module, function]
    try:
        done = subprocess.run(
            argv, input=json.dumps(arguments).encode(), capture_output=True, timeout=timeout,
            check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise ChildError(f"{module}.{function}: no answer within {timeout:.0f}s") from None
    if done.returncode == VALUE_ERROR:
        raise ValueError(json.loads(done.stdout)["error"])
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-5:]
        raise ChildError(f"{module}.{function} failed ({done.returncode}): " + " / ".join(tail))
    return json.loads(done.stdout)["result"]


def _call_here(module: str, function: str, arguments: dict[str, Any]) -> Any:
    """`call` without the child: the arguments and result pass through JSON
    as they would through the pipe, and errors come back as `call`'s."""
    arguments = json.loads(json.dumps(arguments))
    try:
        result = getattr(importlib.import_module(module), function)(**arguments)
    except ValueError as err:
        raise ValueError(str(err)) from None
    except Exception as err:
        raise ChildError(f"{module}.{function} failed: {type(err).__name__}: {err}") from err
    return json.loads(json.dumps(result))


def main(argv: list[str]) -> int:
    """The child: `MODULE FUNCTION`, keyword arguments as JSON on stdin."""
    module, function = argv
    arguments = json.loads(sys.stdin.buffer.read() or b"{}")
    try:
        result = getattr(importlib.import_module(module), function)(**arguments)
    except ValueError as err:
        sys.stdout.write(json.dumps({"error": str(err)}))
        return VALUE_ERROR
    except Exception:
        traceback.print_exc()
        return 1
    sys.stdout.write(json.dumps({"result": result}))
    return 0
