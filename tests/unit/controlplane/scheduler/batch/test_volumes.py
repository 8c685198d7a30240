"""The batch scheduler runs the default scheduler's volume plugins: claims decide where a
gang goes, WaitForFirstConsumer claims are provisioned on the nodes chosen, and a
missing claim keeps the whole gang Pending with the reason.

The InMemoryVolumeWriter plays the PV controller and the local-path provisioner.
"""

from __future__ import annotations

from controlplane.scheduler.volume_state import InMemoryVolumeWriter
from tests.unit.controlplane.scheduler.batch.harness import Env
from tests.unit.controlplane.scheduler.test_volume_plugins import claim, node, sc


def env() -> tuple[Env, InMemoryVolumeWriter]:
    e = Env()
    writer = InMemoryVolumeWriter(e.sched.cache.volumes)
    e.sched.cache.volumes.writer = writer
    e.sched.cache.on_storage("StorageClass", "ADDED", sc("local-path"))
    # n0's agent runs no local-path provisioner; n1 and n2 do.
    for n in (node("n0", local_path=False), node("n1"), node("n2")):
        e.sched.cache.on_node(n)
    return e, writer


def test_wait_for_first_consumer_claims_are_provisioned_where_the_gang_goes() -> None:
    e, writer = env()
    for i in range(2):
        e.sched.cache.on_storage("PersistentVolumeClaim", "ADDED", claim(f"data-{i}"))
    e.job("j", 2, claim="data")
    e.run(2)
    bound = e.bound("j")
    assert len(bound) == 2 and set(bound.values()) <= {"n1", "n2"}
    assert sorted(writer.calls) == [
        ("provision", f"default/data-{i}", bound[f"default/j-t-{i}"]) for i in range(2)
    ]
    assert e.group_status("j")["phase"] == "Running"


def test_a_missing_claim_holds_the_whole_gang_with_the_reason() -> None:
    e, writer = env()
    e.sched.cache.on_storage("PersistentVolumeClaim", "ADDED", claim("data-0"))
    e.job("j", 2, claim="data")  # data-1 does not exist
    e.run(2)
    assert not e.bound("j") and not writer.calls
    [cond] = e.group_status("j")["conditions"]
    assert 'persistentvolumeclaim "data-1" not found' in cond["message"]
    # The claim appearing lets the gang go.
    e.sched.cache.on_storage("PersistentVolumeClaim", "ADDED", claim("data-1"))
    e.run(2)
    assert len(e.bound("j")) == 2
