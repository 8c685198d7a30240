"""Install `skiff-cni` and `skiff-ipam` into a CNI bin directory as fast
launchers.

A pip console script starts the interpreter with `site`, which in an
editable install also imports setuptools' path finder (pathlib, urllib,
...): 15-40 ms per plugin call, more than the whole ADD. The launcher runs
the same interpreter with `-S` and puts the directory that holds the
`runtime` package on `sys.path` itself, and with `-E` so that a runtime's
PYTHONDONTWRITEBYTECODE cannot make every call recompile the plugin. `skiff up`/`make up` should call
`python -m runtime.cni.install --bin-dir /opt/cni/bin` instead of linking
the console scripts (which keep working, only slower).
"""

from __future__ import annotations

import argparse
import os
import sys

import runtime
from machinery.atomicfile import write_atomic

ENTRY_POINTS = {"skiff-cni": "runtime.cni.main", "skiff-ipam": "runtime.cni.ipam_main"}


def launcher_text(module: str, python: str, root: str) -> str:
    return (
        f"#!{python} -SE\n"
        f'"""skiff CNI launcher (written by runtime.cni.install)."""\n'
        "import sys\n"
        f"sys.path.insert(0, {root!r})\n"
        f"from {module} import main\n"
        "main()\n"
    )


def install(bin_dir: str, python: str | None = None) -> list[str]:
    """Write the launchers atomically; return their paths. Also byte-compile
    the plugin's modules so no call pays for compiling them."""
    import compileall

    root = os.path.dirname(os.path.dirname(os.path.abspath(runtime.__file__)))
    compileall.compile_dir(os.path.join(root, "runtime", "cni"), quiet=1)
    compileall.compile_file(os.path.join(root, "runtime", "__init__.py"), quiet=1)
    compileall.compile_dir(os.path.join(root, "machinery"), quiet=1)  # the plugin's floor
    python = python or sys.executable
    os.makedirs(bin_dir, exist_ok=True)
    written = []
    for name, module in ENTRY_POINTS.items():
        dest = os.path.join(bin_dir, name)
        write_atomic(dest, launcher_text(module, python, root), durable=True, mode=0o755)
        written.append(dest)
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--bin-dir", default="/opt/cni/bin")
    parser.add_argument("--python", default=None, help="interpreter (default: this one)")
    ns = parser.parse_args(argv)
    for path in install(ns.bin_dir, ns.python):
        print(path)


if __name__ == "__main__":
    main()
