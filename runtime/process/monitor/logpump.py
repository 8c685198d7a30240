"""The log pump: the init's stdout and stderr (or its pty) into the CRI log
file, line by line, tagged and timestamped (runtime.process.logs), and out
to attached clients; reopened on ReopenContainerLog.

A mixin of the container monitor (`container.ContainerMonitor`): it uses
the monitor's state in `base.MonitorBase`. Standard library only.
"""

from __future__ import annotations

import os

from runtime.process.monitor.base import MonitorBase


class LogPump(MonitorBase):
    # init output -> CRI log
    def _pump(self, fd: int) -> bool:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return False
        except OSError:  # EIO: the pty's last holder closed it
            data = b""
        w = self.writers[fd]
        if not data:
            self._log_write(w.flush())
            del self.writers[fd]
            if fd != self.master:
                os.close(fd)
            return False
        self._log_write(w.feed(data))
        for a in self.attachers.values():
            target = a.err if w.tag == b"stderr" and a.err >= 0 else a.out
            if target >= 0:
                try:
                    os.write(target, data)
                except BlockingIOError:
                    pass  # a slow client loses output rather than stalling the log
                except OSError:
                    a.out = a.err = -1
        return True

    def _log_write(self, data: bytes) -> None:
        if data:
            try:
                self.log.write(data)
            except OSError:
                # the log directory went away; keep the container running
                pass

    def _drain(self) -> None:
        for fd in list(self.writers):
            os.set_blocking(fd, False)
            while fd in self.writers and self._pump(fd):
                pass
            if fd in self.writers:
                self._log_write(self.writers.pop(fd).flush())
                os.close(fd)
