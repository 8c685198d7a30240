"""`skiff runtime`: parse flags, set up logging, serve until SIGTERM/SIGINT.
Stopping the runtime never stops containers: their monitors live on and a
new runtime recovers them."""

from __future__ import annotations

import logging
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from runtime.config import from_args


def main(argv: Sequence[str]) -> int:
    cfg = from_args(argv)
    logging.basicConfig(
        level=getattr(logging, cfg.log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    from runtime.server import Server

    server = Server(cfg)
    server.start()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        logging.getLogger("skiff.runtime").info("signal %d: shutting down", signum)
        server.stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    from machinery.libc import release_free_memory

    release_free_memory()  # what startup left free (about 1 MB at rest)
    while not server.stopped.wait(3600):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
