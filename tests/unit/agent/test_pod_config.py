from typing import Any

import pytest

from agent.pod_config import (
    ConfigError,
    NodeSettings,
    container_config,
    dns_config,
    expand,
    pod_cgroup_parent,
    resolve_env,
    sandbox_config,
)
from proto.runtime.v1 import api_pb2 as cri

NODE = NodeSettings(
    cluster_dns=("10.96.0.10",),
    host_dns_servers=("127.0.0.53",),
    host_dns_searches=("lan",),
    node_name="n1",
    host_ip="192.0.2.1",
    cgroup_root="/skiff/pods",
)


def make_pod(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "web",
            "namespace": "prod",
            "uid": "u-1",
            "labels": {"app": "web"},
            "annotations": {"a": "b"},
        },
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
        "status": {"podIP": "10.244.0.5"},
    }


def no_data(ns: str, name: str) -> None:
    return None


def test_sandbox_config_fields() -> None:
    sc = sandbox_config(make_pod(), NODE, attempt=2)
    assert (sc.metadata.name, sc.metadata.namespace, sc.metadata.uid, sc.metadata.attempt) == (
        "web",
        "prod",
        "u-1",
        2,
    )
    assert sc.hostname == "web"
    assert sc.log_directory == "/var/log/pods/prod_web_u-1"
    assert sc.labels["app"] == "web" and sc.labels["io.kubernetes.pod.uid"] == "u-1"
    assert sc.annotations == {"a": "b"}
    assert sc.linux.cgroup_parent == "/skiff/pods/besteffort/podu-1"
    assert sc.linux.security_context.namespace_options.network == cri.POD


def test_host_network_and_ports() -> None:
    p = make_pod(hostNetwork=True)
    p["spec"]["containers"][0]["ports"] = [
        {"containerPort": 80, "hostPort": 8080},
        {"containerPort": 53, "protocol": "UDP", "hostPort": 53},
        {"containerPort": 9000},
    ]
    sc = sandbox_config(p, NODE, 0)
    assert sc.hostname == ""
    assert sc.linux.security_context.namespace_options.network == cri.NODE
    assert [(m.container_port, m.host_port, m.protocol) for m in sc.port_mappings] == [
        (80, 8080, cri.TCP),
        (53, 53, cri.UDP),
    ]


def test_cgroup_parent_by_qos() -> None:
    p = make_pod()
    p["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1", "memory": "1Gi"}}
    assert pod_cgroup_parent(p, "/r") == "/r/podu-1"
    p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    assert pod_cgroup_parent(p, "/r") == "/r/burstable/podu-1"


@pytest.mark.parametrize(
    ("spec", "servers", "searches", "options"),
    [
        (
            {},
            ["10.96.0.10"],
            ["prod.svc.cluster.local", "svc.cluster.local", "cluster.local", "lan"],
            ["ndots:5"],
        ),
        ({"dnsPolicy": "Default"}, ["127.0.0.53"], ["lan"], []),
        ({"hostNetwork": True}, ["127.0.0.53"], ["lan"], []),
        (
            {
                "dnsPolicy": "None",
                "dnsConfig": {
                    "nameservers": ["1.2.3.4"],
                    "searches": ["x"],
                    "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}],
                },
            },
            ["1.2.3.4"],
            ["x"],
            ["ndots:2", "edns0"],
        ),
    ],
)
def test_dns_policies(
    spec: dict[str, Any], servers: list[str], searches: list[str], options: list[str]
) -> None:
    d = dns_config(make_pod(**spec), NODE)
    assert (list(d.servers), list(d.searches), list(d.options)) == (servers, searches, options)


def test_expand() -> None:
    env = {"A": "1", "B": "two"}
    assert expand("$(A)-$(B)-$(C)-$$(A)", env) == "1-two-$(C)-$(A)"


def test_resolve_env_sources_and_order() -> None:
    p = make_pod()
    c = {
        "name": "c",
        "resources": {"limits": {"memory": "64Mi", "cpu": "500m"}},
        "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"}],
        "env": [
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {
                "name": "MEM",
                "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
            },
            {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "s", "key": "password"}}},
            {"name": "GREETING", "value": "hi $(POD) from $(CM_color)"},
        ],
    }
    cms = {("prod", "cm"): {"color": "blue"}}
    secrets = {("prod", "s"): {"password": "hunter2"}}
    env = dict(
        resolve_env(p, c, NODE, lambda ns, n: cms.get((ns, n)), lambda ns, n: secrets.get((ns, n)))
    )
    assert env == {
        "CM_color": "blue",
        "POD": "web",
        "APP": "web",
        "IP": "10.244.0.5",
        "NODE": "n1",
        "MEM": "64",
        "PW": "hunter2",
        "GREETING": "hi web from blue",
    }


def test_resolve_env_missing_sources() -> None:
    p = make_pod()
    missing = {
        "name": "c",
        "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k"}}}],
    }
    with pytest.raises(ConfigError, match="configmap prod/nope not found"):
        resolve_env(p, missing, NODE, no_data, no_data)
    optional = {
        "name": "c",
        "env": [
            {
                "name": "X",
                "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k", "optional": True}},
            }
        ],
    }
    assert resolve_env(p, optional, NODE, no_data, no_data) == []
    badkey = {
        "name": "c",
        "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}],
    }
    with pytest.raises(ConfigError, match="couldn't find key k in configmap prod/cm"):
        resolve_env(p, badkey, NODE, lambda ns, n: {}, no_data)


def test_container_config() -> None:
    p = make_pod(securityContext={"runAsUser": 1000, "supplementalGroups": [5]})
    c = {
        "name": "c",
        "image": "busybox:1",
        "command": ["sh", "-c"],
        "args": ["echo $(MSG)"],
        "tty": True,
        "securityContext": {
            "capabilities": {"add": ["NET_ADMIN"], "drop": ["ALL"]},
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    cfg = container_config(
        p, c, 3, [("MSG", "hello")], [], cri.LinuxContainerResources(), image_ref="sha256:abc"
    )
    assert cfg.metadata.name == "c" and cfg.metadata.attempt == 3
    assert cfg.image.image == "sha256:abc" and cfg.image.user_specified_image == "busybox:1"
    assert list(cfg.command) == ["sh", "-c"] and list(cfg.args) == ["echo hello"]
    assert cfg.log_path == "c/3.log" and cfg.tty
    assert [(e.key, e.value) for e in cfg.envs] == [("MSG", b"hello")]
    sec = cfg.linux.security_context
    assert list(sec.capabilities.add_capabilities) == ["NET_ADMIN"]
    assert sec.no_new_privs and sec.readonly_rootfs and sec.run_as_user.value == 1000
    assert list(sec.supplemental_groups) == [5]
    assert sec.seccomp_profile_path == "runtime/default"
    assert cfg.annotations["io.kubernetes.container.restartCount"] == "3"
    assert cfg.labels["io.kubernetes.container.name"] == "c"
