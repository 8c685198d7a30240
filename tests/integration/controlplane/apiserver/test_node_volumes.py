"""A node reads only the PersistentVolumes of its pods' claims (issue 32),
through the API server's gRPC API with a node's own credential.

Before, every node could list, watch and get every PersistentVolume (the
agent's local-path half watched them all): a node learnt the host paths,
NFS servers and claims of every volume in the cluster. Now it gets a volume
one of its pods' claims is bound to, and lists or watches only the
local-path volumes pinned to it, by their node label; it may not move that
label."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.api import volumes as v
from controlplane.client.apiclient import GrpcApiClient
from controlplane.client.errors import Forbidden
from controlplane.client.interface import ListOptions
from tests.fakes.api_objects import pod
from tests.harness.apiserver import Cluster
from tests.integration.controlplane.apiserver.test_node_authorizer import node_client

MINE = f"{v.LOCAL_PATH_NODE_LABEL}=n1"


def volume(name: str, node: str = "", path: str = "/srv/data") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                            "hostPath": {"path": path}}  # fmt: skip
    if node:
        meta["labels"] = {v.LOCAL_PATH_NODE_LABEL: node}
        meta["annotations"] = {v.PROVISIONED_BY_ANNOTATION: v.LOCAL_PATH_PROVISIONER}
        spec = {**spec, "local": {"path": f"/var/lib/skiff/local-path/{name}"},
                "nodeAffinity": v.node_affinity_for(node)}  # fmt: skip
        del spec["hostPath"]
    return {"metadata": meta, "spec": spec}


@pytest.fixture
def admin(cluster: Cluster) -> Iterator[GrpcApiClient]:
    with cluster.client() as c:
        for pv in (volume("pv-n1", "n1"), volume("pv-n2", "n2"), volume("pv-claimed"),
                   volume("pv-unrelated", path="/srv/secret")):  # fmt: skip
            c.create("PersistentVolume", pv)
        claim = {"metadata": {"name": "data"},
                 "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": "pv-claimed",
                          "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip
        c.create("PersistentVolumeClaim", claim, "default")
        c.create("Pod", pod("app", node="n1", volumes=[
            {"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]), "default")  # fmt: skip
        yield c


def test_a_node_lists_and_watches_only_its_local_path_volumes(
    cluster: Cluster, admin: GrpcApiClient
) -> None:
    with node_client(cluster, "n1") as n1:
        for options in (None, ListOptions(label_selector=f"{v.LOCAL_PATH_NODE_LABEL}=n2"),
                        ListOptions(label_selector="app=x")):  # fmt: skip
            with pytest.raises(Forbidden, match="may list persistentvolumes only with"):
                n1.list("PersistentVolume", options=options)
            with pytest.raises(Forbidden, match="may watch persistentvolumes only with"):
                next(iter(n1.watch("PersistentVolume", options=options)))
        listed = n1.list("PersistentVolume", options=ListOptions(label_selector=MINE))
        assert [item["metadata"]["name"] for item in listed.items] == ["pv-n1"]
        watch = n1.watch("PersistentVolume", options=ListOptions(
            label_selector=MINE, resource_version=listed.resource_version))  # fmt: skip
        try:
            for name in ("pv-n2", "pv-unrelated", "pv-n1"):
                admin.patch("PersistentVolume", name, {"metadata": {"annotations": {"x": "1"}}})
            # The first object event (a bookmark may come before it).
            first = next(e for e in watch if e.type != "BOOKMARK")
            assert first.object["metadata"]["name"] == "pv-n1"
        finally:
            watch.stop()


def test_a_node_gets_only_the_volumes_of_its_pods_claims(
    cluster: Cluster, admin: GrpcApiClient
) -> None:
    with node_client(cluster, "n1") as n1:
        assert n1.get("PersistentVolume", "pv-claimed")["spec"]["hostPath"]["path"] == "/srv/data"
        for name in ("pv-unrelated", "pv-n2"):
            with pytest.raises(Forbidden, match="no claim of a pod bound to it is bound to it"):
                n1.get("PersistentVolume", name)


def test_a_node_may_not_move_its_volume_to_another_node(
    cluster: Cluster, admin: GrpcApiClient
) -> None:
    with node_client(cluster, "n1") as n1:
        n1.patch("PersistentVolume", "pv-n1", {"metadata": {"annotations": {"x": "y"}}})
        with pytest.raises(Forbidden, match="only the metadata of local-path volumes"):
            n1.patch("PersistentVolume", "pv-n1",
                     {"metadata": {"labels": {v.LOCAL_PATH_NODE_LABEL: "n2"}}})  # fmt: skip
    assert admin.get("PersistentVolume", "pv-n1")["metadata"]["labels"] == {
        v.LOCAL_PATH_NODE_LABEL: "n1"
    }
