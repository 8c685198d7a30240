"""CRI config -> monitor spec rules, and the records' state machines and
checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest

from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.cri import container_spec
from runtime.store import checkpoint
from runtime.store.records import Container, ContainerState, Store, container_from_json, to_json

IMAGE = {
    "Entrypoint": ["/ep"],
    "Cmd": ["a", "b"],
    "Env": ["PATH=/bin", "X=1"],
    "User": "www-data:33",
}


def cfg(**kw: object) -> api_pb2.ContainerConfig:
    return api_pb2.ContainerConfig(**kw)  # type: ignore[arg-type]


def test_command_merge_rules() -> None:
    assert container_spec.command(cfg(), IMAGE) == ["/ep", "a", "b"]
    assert container_spec.command(cfg(args=["c"]), IMAGE) == ["/ep", "c"]
    assert container_spec.command(cfg(command=["sh"]), IMAGE) == ["sh"]
    assert container_spec.command(cfg(command=["sh"], args=["-c", "x"]), IMAGE) == ["sh", "-c", "x"]
    with pytest.raises(errors.InvalidArgument):
        container_spec.command(cfg(), {})


def test_env_and_user() -> None:
    env = container_spec.environment(cfg(envs=[api_pb2.KeyValue(key="X", value=b"2")]), IMAGE)
    assert env == ["PATH=/bin", "X=2"]
    sc = api_pb2.LinuxContainerSecurityContext
    assert container_spec.user(sc(), IMAGE) == {"groups": [], "username": "www-data", "gid": 33}
    assert container_spec.user(sc(run_as_user=api_pb2.Int64Value(value=5)), IMAGE)["uid"] == 5
    with pytest.raises(errors.InvalidArgument):
        container_spec.user(sc(run_as_group=api_pb2.Int64Value(value=5)), IMAGE)


def test_seccomp_names() -> None:
    sc = api_pb2.LinuxContainerSecurityContext
    assert container_spec.seccomp_profile(sc()) == ""
    assert container_spec.seccomp_profile(sc(seccomp_profile_path="unconfined")) == ""
    assert (
        container_spec.seccomp_profile(sc(seccomp_profile_path="docker/default"))
        == "runtime/default"
    )
    assert (
        container_spec.seccomp_profile(sc(seccomp_profile_path="localhost/p.json"))
        == "localhost/p.json"
    )
    assert (
        container_spec.seccomp_profile(sc(privileged=True, seccomp_profile_path="runtime/default"))
        == ""
    )
    with pytest.raises(errors.InvalidArgument):
        container_spec.seccomp_profile(sc(seccomp_profile_path="/abs/profile.json"))


def test_mount_propagation(tmp_path: Path) -> None:
    m = api_pb2.Mount
    mounts, root = container_spec.mount_list(cfg(mounts=[
        m(container_path="/a", host_path=str(tmp_path)),
        m(container_path="/b", host_path=str(tmp_path), propagation=api_pb2.PROPAGATION_HOST_TO_CONTAINER),
    ]))  # fmt: skip
    assert [x["propagation"] for x in mounts] == ["rprivate", "rslave"] and root == "rslave"
    with pytest.raises(errors.InvalidArgument):
        container_spec.mount_list(cfg(mounts=[m(container_path="rel", host_path=str(tmp_path))]))


def make(cid: str = "c1", name: str = "web") -> Container:
    return Container(cid, "s1", name, 0, "", 1, "img", "ref", "sha256:x", "", "/p/c1")


def test_container_state_machine() -> None:
    c = make()
    c.transition(ContainerState.RUNNING)
    c.transition(ContainerState.EXITED)
    with pytest.raises(errors.FailedPrecondition):
        c.transition(ContainerState.RUNNING)


def test_store_names_and_checkpoints(tmp_path: Path) -> None:
    store: Store[Container] = Store(tmp_path / "containers")
    c = make()
    store.reserve(c)
    with pytest.raises(errors.AlreadyExists, match="c1"):
        store.reserve(make("c2"))
    store.save(c)
    loaded = container_from_json(checkpoint.load(tmp_path / "containers" / "c1" / "meta.json"))
    assert to_json(loaded) == to_json(c)
    assert store.get("c") is c
    store.delete("c1")
    with pytest.raises(errors.NotFound):
        store.get("c1")
    store.reserve(make("c2"))
