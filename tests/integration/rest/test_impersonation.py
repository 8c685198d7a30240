"""Impersonation through the REST API (issue 32's attack; the feature is
issue 28's): an impersonating proxy's requests must run as the user it
names, and a caller without the `impersonate` verb may impersonate no one."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.harness.kubectl import NEWEST
from tests.integration.rest.conftest import Cluster

pytestmark = [pytest.mark.slow]
KUBECTL = str(NEWEST)
RBAC = "rbac.authorization.k8s.io"
PROXY_ROLE = f"""\
apiVersion: {RBAC}/v1
kind: ClusterRole
metadata: {{name: impersonating-proxy}}
rules:
- {{apiGroups: [""], resources: [secrets], verbs: [get, list]}}
- {{apiGroups: [""], resources: [users], verbs: [impersonate]}}
---
apiVersion: {RBAC}/v1
kind: ClusterRoleBinding
metadata: {{name: impersonating-proxy}}
roleRef: {{apiGroup: {RBAC}, kind: ClusterRole, name: impersonating-proxy}}
subjects: [{{apiGroup: {RBAC}, kind: User, name: proxy}}]
"""


def _kubectl(cluster: Cluster, token: str, *args: str) -> tuple[int, str, str]:
    done = subprocess.run([KUBECTL, f"--token={token}", *args], capture_output=True, text=True,
                          timeout=60, env=cluster.env())  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def test_an_impersonating_proxy_acts_as_the_user_it_names(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=PROXY_ROLE)
    authority = cluster.running.server.authority
    assert authority is not None
    proxy = authority.user_token("proxy")
    # The proxy may read secrets itself; alice (no roles) may not: acting as
    # alice, the proxy must be refused what alice is refused.
    code, _, err = _kubectl(cluster, proxy, "get", "secrets", "-n", "kube-system", "--as=alice")
    assert code != 0 and "forbidden" in err.lower(), err
    code, out, _ = _kubectl(cluster, proxy, "auth", "whoami", "--as=alice", "-o", "json")
    assert code == 0 and json.loads(out)["status"]["userInfo"]["username"] == "alice"
    # A caller without the impersonate verb impersonates no one.
    nobody = authority.user_token("mallory")
    code, _, err = _kubectl(cluster, nobody, "get", "secrets", "--as=admin")
    assert code != 0 and "cannot impersonate" in err, err
