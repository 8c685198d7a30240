import http.server
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from agent.probes import ProbeTarget, RealProbeRunner, resolve_port


@pytest.fixture
def http_server() -> Iterator[int]:
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/ok" else 503)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield srv.server_address[1]
    finally:
        srv.shutdown()
        srv.server_close()


def test_real_runner_http_and_tcp(http_server: int) -> None:
    runner = RealProbeRunner(cri=None)  # type: ignore[arg-type]
    target = ProbeTarget("c", "127.0.0.1", {"web": http_server})
    assert runner.run({"httpGet": {"path": "/ok", "port": "web"}}, target, 2) == (True, "")
    ok, msg = runner.run({"httpGet": {"path": "/bad", "port": http_server}}, target, 2)
    assert not ok and "statuscode: 503" in msg
    assert runner.run({"tcpSocket": {"port": http_server}}, target, 2)[0]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    ok, msg = runner.run({"tcpSocket": {"port": closed}}, target, 2)
    assert not ok and "refused" in msg.lower()
    with pytest.raises(ValueError, match="named container port"):
        resolve_port("nope", {})
