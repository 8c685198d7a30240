"""The host steps of `skiff up`: take the data dir, deal with what a previous
instance left before starting, clean the host after stopping, and hand over
credential files. What an instance leaves and how it goes is host_state's.
"""

from __future__ import annotations

import logging

from agent import host_state
from agent.host_state import Instance
from agent.instance_lock import Busy, InstanceLock
from agent.layout import Layout, unsafe_data_dir

log = logging.getLogger("skiff.up")


def take_data_dir(lay: Layout, given: bool) -> InstanceLock:
    """Check the data dir is safe to run from (root's, writable by nobody
    else), make it, and lock it for this instance; RuntimeError if not."""
    if given:
        why = unsafe_data_dir(lay.data_dir)
        if why:
            raise RuntimeError(why)
    lay.data_dir.mkdir(parents=True, exist_ok=True, mode=0o755)
    if given:
        why = unsafe_data_dir(lay.data_dir)
        if why:
            raise RuntimeError(why)
    lock = InstanceLock(lay.data_dir)
    try:
        lock.acquire()
    except Busy as err:
        raise RuntimeError(f"{err}: stop it first, or give another --data-dir") from None
    return lock


def prepare_host(inst: Instance) -> None:
    """Deal with what a previous instance of the same names left (a crash,
    kill -9, --keep-pods): a runtime still running is stopped; pods still
    running are adopted with their network, cgroups and mounts (the runtime
    and the agent take them over); with no pod left, everything goes. Then
    refuse (RuntimeError) if a route or address that is not ours lies in the
    pod or service CIDR."""
    stopped = host_state.stop_runtime(inst)
    if stopped:
        log.info("stopped the runtime a previous instance left running")
    found = host_state.leftovers(inst)
    if found and host_state.processes(inst):
        log.info("adopting the pods a previous instance left: %s", "; ".join(found))
    elif found:
        log.info("removing what a previous instance left: %s", "; ".join(found))
        host_state.teardown(inst)
    vxlan = host_state.vxlan_device(host_state.written_conf(inst))
    clashes = host_state.conflicts(inst, vxlan)
    if clashes:
        raise RuntimeError("\n  ".join(["refusing to start:", *(c.message() for c in clashes)]))
    inst.save()


def clean_host(inst: Instance, keep_pods: bool) -> None:
    """After stopping: remove everything of the instance from the host, or
    with --keep-pods only what the pods left running do not need."""
    if keep_pods:
        log.info(
            "--keep-pods: kept for the pods left running: bridge %s and its route, the CNI"
            " config and IPAM state, cgroups under %s, their mounts and network namespaces"
            " under %s; `skiff down%s` removes them",
            inst.bridge,
            inst.cgroup,
            inst.data_dir,
            "" if inst.data_dir == Layout.standard().data_dir else f" --data-dir {inst.data_dir}",
        )
        return
    try:
        removed = host_state.teardown(inst)
    except (OSError, RuntimeError) as err:
        log.warning("could not remove everything from the host: %s", err)
        return
    if removed:
        log.info("removed from the host: %s", "; ".join(removed))
