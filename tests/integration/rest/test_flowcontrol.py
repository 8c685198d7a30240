"""FlowSchema and PriorityLevelConfiguration (flowcontrol.apiserver.k8s.io/v1)
through kubectl 1.33 (by path) and the official Python client against a
real control plane: Kubernetes' mandatory and suggested configuration
created at start, mandatory objects put back when changed, suggested ones
honouring `apf.kubernetes.io/autoupdate-spec`, the Dangling condition and
the printer columns, validation as Kubernetes words it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.harness.kubectl import NEWEST
from tests.harness.wait import wait_for
from tests.integration.rest.conftest import Cluster

KUBECTL = NEWEST

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not KUBECTL.exists(), reason="kubectl 1.33 is not installed"),
]

FLOWSCHEMAS = {
    "exempt": ["exempt", "1", "<none>"],
    "probes": ["exempt", "2", "<none>"],
    "system-leader-election": ["leader-election", "100", "ByUser"],
    "endpoint-controller": ["workload-high", "150", "ByUser"],
    "workload-leader-election": ["leader-election", "200", "ByUser"],
    "system-node-high": ["node-high", "400", "ByUser"],
    "system-nodes": ["system", "500", "ByUser"],
    "kube-controller-manager": ["workload-high", "800", "ByNamespace"],
    "kube-scheduler": ["workload-high", "800", "ByNamespace"],
    "kube-system-service-accounts": ["workload-high", "900", "ByNamespace"],
    "service-accounts": ["workload-low", "9000", "ByUser"],
    "global-default": ["global-default", "9900", "ByUser"],
    "catch-all": ["catch-all", "10000", "ByUser"],
}
LEVELS = {
    "catch-all": ["Limited", "5", "<none>", "<none>", "<none>"],
    "exempt": ["Exempt", "<none>", "<none>", "<none>", "<none>"],
    "global-default": ["Limited", "20", "128", "6", "50"],
    "leader-election": ["Limited", "10", "16", "4", "50"],
    "node-high": ["Limited", "40", "64", "6", "50"],
    "system": ["Limited", "30", "64", "6", "50"],
    "workload-high": ["Limited", "40", "128", "6", "50"],
    "workload-low": ["Limited", "100", "128", "6", "50"],
}


def kubectl(cluster: Cluster, *args: str, stdin: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:  # fmt: skip
    done = subprocess.run(
        [str(KUBECTL), *args], input=stdin, capture_output=True, text=True, timeout=60,
        env=cluster.env(),
    )  # fmt: skip
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {done.returncode}\n{done.stderr}")
    return done


def get(cluster: Cluster, *what: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(kubectl(cluster, "get", *what, "-o", "json").stdout)
    return found


def table(cluster: Cluster, plural: str) -> tuple[list[str], dict[str, list[str]]]:
    lines = kubectl(cluster, "get", plural).stdout.splitlines()
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    return lines[0].split(), rows


@pytest.fixture(scope="module", autouse=True)
def controllers_running(cluster: Cluster) -> None:
    """The controller manager is up (it starts after the API server, and on
    a loaded machine takes a while to win its lease): the default
    namespace's ServiceAccount is its first work."""
    wait_for(
        lambda: kubectl(cluster, "get", "serviceaccount", "default", check=False).returncode == 0,
        120, interval=0.5, message="the controller manager",
    )  # fmt: skip


@pytest.fixture
def api(cluster: Cluster) -> Iterator[Any]:
    kubernetes = pytest.importorskip("kubernetes")
    client = kubernetes.config.new_client_from_config(str(cluster.kubeconfig))
    try:
        yield client
    finally:
        client.close()


def test_bootstrap_configuration_and_columns(cluster: Cluster, api: Any) -> None:
    def settled() -> dict[str, list[str]]:
        rows = table(cluster, "flowschemas")[1]
        ok = set(FLOWSCHEMAS) <= set(rows) and all(r[-1] == "False" for r in rows.values())
        return rows if ok else {}

    rows = wait_for(settled, 30, interval=0.2, message="the bootstrap FlowSchemas")
    header = table(cluster, "flowschemas")[0]
    assert header == ["NAME", "PRIORITYLEVEL", "MATCHINGPRECEDENCE", "DISTINGUISHERMETHOD",
                      "AGE", "MISSINGPL"]  # fmt: skip
    for name, cells in FLOWSCHEMAS.items():
        assert rows[name][:3] == cells and rows[name][4] == "False", name
    # kubectl lists them by name; the order of matching is the precedence.
    header, levels = table(cluster, "prioritylevelconfigurations")
    assert header == ["NAME", "TYPE", "NOMINALCONCURRENCYSHARES", "QUEUES", "HANDSIZE",
                      "QUEUELENGTHLIMIT", "AGE"]  # fmt: skip
    assert {n: c[:5] for n, c in levels.items() if n in LEVELS} == LEVELS
    fs = get(cluster, "flowschema", "exempt")
    assert fs["metadata"]["annotations"] == {"apf.kubernetes.io/autoupdate-spec": "true"}
    assert fs["spec"]["rules"][0]["subjects"] == [
        {"kind": "Group", "group": {"name": "system:masters"}}
    ]
    cond = fs["status"]["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Dangling", "False", "Found")
    assert cond["message"] == ('This FlowSchema references the PriorityLevelConfiguration '
                               'object named "exempt" and it exists')  # fmt: skip
    kubernetes = pytest.importorskip("kubernetes")
    flow = kubernetes.client.FlowcontrolApiserverV1Api(api)
    listed = {i.metadata.name: i for i in flow.list_flow_schema().items}
    assert listed["catch-all"].spec.distinguisher_method.type == "ByUser"
    plc = flow.read_priority_level_configuration("catch-all")
    assert plc.spec.limited.limit_response.type == "Reject"
    resources = kubectl(cluster, "api-resources", "--api-group=flowcontrol.apiserver.k8s.io").stdout
    assert [line.split() for line in resources.splitlines()[1:]] == [
        ["flowschemas", "flowcontrol.apiserver.k8s.io/v1", "false", "FlowSchema"],
        ["prioritylevelconfigurations", "flowcontrol.apiserver.k8s.io/v1", "false",
         "PriorityLevelConfiguration"],
    ]  # fmt: skip


def precedence(cluster: Cluster, name: str) -> int:
    return int(get(cluster, "flowschema", name)["spec"]["matchingPrecedence"])


def shares(cluster: Cluster, name: str) -> int:
    return int(get(cluster, "prioritylevelconfiguration", name)["spec"]["limited"]
               ["nominalConcurrencyShares"])  # fmt: skip


def test_mandatory_objects_are_put_back(cluster: Cluster) -> None:
    wait_for(lambda: precedence(cluster, "catch-all") == 10000, 30, message="catch-all")
    kubectl(cluster, "patch", "flowschema", "catch-all", "--type=merge",
            "-p", '{"spec": {"matchingPrecedence": 5000}}')  # fmt: skip
    wait_for(lambda: precedence(cluster, "catch-all") == 10000, 30, message="restored")
    kubectl(cluster, "delete", "prioritylevelconfiguration", "catch-all")
    wait_for(lambda: shares(cluster, "catch-all") == 5, 30, message="recreated")
    # The exempt level's `exempt` settings are the admin's to change.
    kubectl(cluster, "patch", "prioritylevelconfiguration", "exempt", "--type=merge",
            "-p", '{"spec": {"exempt": {"nominalConcurrencyShares": 3}}}')  # fmt: skip
    kubectl(cluster, "patch", "flowschema", "catch-all", "--type=merge",
            "-p", '{"spec": {"matchingPrecedence": 5000}}')  # fmt: skip
    wait_for(lambda: precedence(cluster, "catch-all") == 10000, 30, message="restored again")
    exempt = get(cluster, "prioritylevelconfiguration", "exempt")["spec"]["exempt"]
    assert exempt["nominalConcurrencyShares"] == 3


def test_suggested_objects_honour_autoupdate_spec(cluster: Cluster) -> None:
    wait_for(lambda: shares(cluster, "workload-low") == 100, 30, message="workload-low")
    kubectl(cluster, "patch", "prioritylevelconfiguration", "workload-low", "--type=merge",
            "-p", '{"spec": {"limited": {"nominalConcurrencyShares": 7}}}')  # fmt: skip
    wait_for(lambda: shares(cluster, "workload-low") == 100, 30, message="auto-updated back")
    kubectl(cluster, "delete", "prioritylevelconfiguration", "workload-low")
    wait_for(lambda: shares(cluster, "workload-low") == 100, 30, message="created again")
    kubectl(cluster, "annotate", "prioritylevelconfiguration", "global-default", "--overwrite",
            "apf.kubernetes.io/autoupdate-spec=false")  # fmt: skip
    kubectl(cluster, "patch", "prioritylevelconfiguration", "global-default", "--type=merge",
            "-p", '{"spec": {"limited": {"nominalConcurrencyShares": 50}}}')  # fmt: skip
    # Something the controller must act on after the edit, to know it has seen it.
    kubectl(cluster, "patch", "flowschema", "catch-all", "--type=merge",
            "-p", '{"spec": {"matchingPrecedence": 5000}}')  # fmt: skip
    wait_for(lambda: precedence(cluster, "catch-all") == 10000, 30, message="restored")
    assert shares(cluster, "global-default") == 50


def test_dangling_and_validation(cluster: Cluster) -> None:
    mine = """
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: mine}
spec:
  priorityLevelConfiguration: {name: nope}
  rules:
  - subjects: [{kind: User, user: {name: alice}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"]}]
"""
    kubectl(cluster, "create", "-f", "-", stdin=mine)
    try:
        assert precedence(cluster, "mine") == 1000  # defaulted
        wait_for(lambda: table(cluster, "flowschemas")[1]["mine"][-1] == "True", 30,
                 message="dangling")  # fmt: skip
        cond = get(cluster, "flowschema", "mine")["status"]["conditions"][0]
        assert (cond["reason"], cond["message"]) == ("NotFound", (
            'This FlowSchema references the PriorityLevelConfiguration object named "nope" '
            "but there is no such object"))  # fmt: skip
        level = """
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: nope}
spec: {type: Limited, limited: {limitResponse: {type: Queue}}}
"""
        kubectl(cluster, "create", "-f", "-", stdin=level)
        wait_for(lambda: table(cluster, "flowschemas")[1]["mine"][-1] == "False", 30,
                 message="found")  # fmt: skip
        _, levels = table(cluster, "prioritylevelconfigurations")
        assert levels["nope"][:5] == ["Limited", "30", "64", "8", "50"]  # v1 defaults
    finally:
        kubectl(cluster, "delete", "flowschema", "mine", check=False)
        kubectl(cluster, "delete", "prioritylevelconfiguration", "nope", check=False)
    bad = mine.replace("name: mine", "name: bad").replace(
        "  priorityLevelConfiguration: {name: nope}\n",
        "  priorityLevelConfiguration: {name: nope}\n  matchingPrecedence: 1\n",
    )
    refused = kubectl(cluster, "create", "-f", "-", stdin=bad, check=False)
    assert refused.returncode != 0
    assert ("spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may "
            "have matchingPrecedence 1") in refused.stderr  # fmt: skip
    wrong = """
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: free}
spec: {type: Exempt}
"""
    refused = kubectl(cluster, "create", "-f", "-", stdin=wrong, check=False)
    assert refused.returncode != 0
    assert (
        "spec.type: Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is "
        "'exempt'"
    ) in refused.stderr


def test_flow_schemas_decide_each_requests_level(cluster: Cluster, api: Any) -> None:
    """The stored objects drive the API server: the answer names the
    FlowSchema and priority level by UID (X-Kubernetes-PF-* headers); a
    FlowSchema sending alice to a level with no seat and Reject makes her
    requests 429 with Kubernetes' message, and deleting it lets them
    through again (to global-default)."""
    kubernetes = pytest.importorskip("kubernetes")
    core = kubernetes.client.CoreV1Api(api)

    def uid(kind: str, name: str) -> str:
        return str(get(cluster, kind, name)["metadata"]["uid"])

    _, code, headers = core.list_namespace_with_http_info()
    assert code == 200
    assert headers["X-Kubernetes-PF-FlowSchema-UID"] == uid("flowschema", "exempt")
    assert headers["X-Kubernetes-PF-PriorityLevel-UID"] == uid(
        "prioritylevelconfiguration", "exempt"
    )

    def as_alice() -> tuple[int, dict[str, str], str]:
        api.set_default_header("Impersonate-User", "alice")
        try:
            core.list_namespaced_config_map("default")
            return 200, {}, ""
        except kubernetes.client.ApiException as err:
            return err.status, dict(err.headers or {}), str(err.body)
        finally:
            api.default_headers.pop("Impersonate-User", None)

    status, headers, _ = as_alice()
    assert status == 403  # no RBAC grant: classified first all the same
    assert headers["X-Kubernetes-PF-FlowSchema-UID"] == uid("flowschema", "global-default")
    kubectl(
        cluster,
        "apply",
        "-f",
        "-",
        stdin="""
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: no-seats}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 0
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: alice}
spec:
  priorityLevelConfiguration: {name: no-seats}
  matchingPrecedence: 50
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: alice}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"]}]
""",
    )
    try:
        got: list[tuple[int, dict[str, str], str]] = []

        def refused() -> bool:
            got.append(as_alice())
            return got[-1][0] == 429

        wait_for(refused, 30, message="alice refused by her FlowSchema")
        _, headers, body = got[-1]
        assert "Too many requests, please try again later." in body
        assert headers["X-Kubernetes-PF-FlowSchema-UID"] == uid("flowschema", "alice")
        assert headers["X-Kubernetes-PF-PriorityLevel-UID"] == uid(
            "prioritylevelconfiguration", "no-seats"
        )
        assert headers["Retry-After"] == "1"
        # Other users are not affected.
        assert core.list_namespace_with_http_info()[1] == 200
    finally:
        kubectl(cluster, "delete", "flowschema", "alice", "--ignore-not-found")
        kubectl(cluster, "delete", "prioritylevelconfiguration", "no-seats", "--ignore-not-found")
    wait_for(lambda: as_alice()[0] == 403, 30, message="alice back in global-default")
