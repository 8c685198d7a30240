"""`skiff runtime`: parse flags, set up logging, serve until SIGTERM/SIGINT.
Stopping the runtime never stops containers: their monitors live on and a
new runtime recovers them."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from machinery.signals import StopSignals
from runtime.config import from_args

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runtime.server import ImagesFactory


def main(argv: Sequence[str], images_factory: ImagesFactory | None = None) -> int:
    """`skiff runtime ARGV`; `images_factory` replaces the image store (tests)."""
    cfg = from_args(argv)
    logging.basicConfig(
        level=getattr(logging, cfg.log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    from runtime.server import Server

    stop = StopSignals()
    server = Server(cfg) if images_factory is None else Server(cfg, images_factory)
    server.start()
    from machinery.libc import release_free_memory

    release_free_memory()  # what startup left free (about 1 MB at rest)
    stop.wait_in_main()
    logging.getLogger("skiff.runtime").info("signal %s: shutting down", stop.signum)
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
