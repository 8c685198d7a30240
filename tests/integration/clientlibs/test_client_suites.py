"""The client libraries' own end-to-end suites, unchanged, against a real
`skiff up` with one node (tests/harness/clientlibs.py): each must pass at least
as many of its tests as it did when this runner was last measured, so a
change that breaks what a client library relies on shows here. Marker
`clientlibs` (excluded by default: it makes a virtualenv from PyPI and runs
for about 25 minutes); `make test-clientlibs` runs it, or
`python -m tests.harness.clientlibs` for the table of passes and failures.
Suites whose sources are not configured (the Python client's and
lightkube's need their git directories) are skipped, naming the variable."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import clientlibs

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.clientlibs]

# Passed on skiff when last measured (2026-12-03, skiff up --disable
# metrics-server with one node, as kind has no metrics-server; of 42, 238, 22
# and 14 run: the Python client's metrics test skips, "Metrics API
# unavailable", as on kind). What fails, none of it skiff's to fix:
# - lightkube's test_pod_apis wants a metrics-server pod in kube-system
#   (its CI runs k3s; kind has none either);
# - kopf's admission example: oscrypto 1.3.0 cannot read OpenSSL 3.0.19's
#   version string (fixed in its git, never released to PyPI).
# Flaky, so not counted:
# - kopf's 07-subhandlers: a ResourceWarning for an unclosed connection of
#   the operator's, turned into a failure by pytest. The client's race, not
#   skiff's: kopf's runner closes its loop right after cancelling its watch
#   streams (no sleep on aiohttp >= 3.12.4, whose session.close() waits only
#   for pooled connections, not for cancelled streams), before any server's
#   close_notify can be read. tests/harness/tls_close_race.py, at load 30-50:
#   unclosed in 10/20 runs against Go's net/http, 16/20 against a bare
#   aiohttp server, 7/20 against skiff, 0/20 each with a 0.25 s sleep; skiff
#   answers a client's close_notify with its FIN in 1.5 ms median (Go's
#   net/http: 0.5 ms; p90 8 and 14 ms). The example itself passed 20/20 then.
# - lightkube's sync exec test (the TLS handshake of the request after the
#   exec fails with WRONG_VERSION_NUMBER in about half the runs here; likely
#   httpx-ws' sync session, whose close leaves a read of the closed socket
#   pending in a thread, which OpenSSL then continues on the reused
#   descriptor of the next connection: not proven; it passed and failed on
#   the same tree);
# Counted although it failed once (2026-12-03, load 16-25), because the
# cause may be skiff's: the Python client's test_pod_apis found the binary
# exec's WebSocket still open 5 s after its Success status on the error
# channel (the text one before it closed in time); skiff's streaming server
# waits up to 5 s (its linger) for the client's close frame where
# Kubernetes closes at once. Not yet explained.
FLOORS = {"pyclient": 42, "kr8s": 238, "lightkube": 20, "kopf": 12}
NEEDS = {"pyclient": "SKIFF_PYCLIENT_GIT", "lightkube": "SKIFF_LIGHTKUBE_GIT"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[clientlibs.SkiffCluster]:
    with clientlibs.skiff_cluster(tmp_path_factory.mktemp("clientlibs")) as running:
        yield running


@pytest.mark.parametrize("name", list(FLOORS))
def test_suite_passes_as_it_did(name: str, cluster: clientlibs.SkiffCluster) -> None:
    if name in NEEDS and not os.environ.get(NEEDS[name]):
        pytest.skip(f"{NEEDS[name]} is not set (the suite is not in the release sdist)")
    py = clientlibs.venv_python()
    suite = clientlibs.suites(py)[name]
    result = clientlibs.run_suite(py, suite, cluster)
    log = Path(cluster.base / f"{name}.log")
    assert result.passed >= FLOORS[name], (
        f"{name}: {result.passed}/{result.total} passed, {FLOORS[name]} before; failing:\n"
        + "\n".join(f"{t}: {why[:200]}" for t, why in sorted(result.failures.items()))
        + f"\n(log: {log})"
    )
