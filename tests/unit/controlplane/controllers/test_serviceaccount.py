"""The serviceaccount controller: every namespace gets (and keeps) `default`."""

from __future__ import annotations


def test_every_namespace_gets_a_default_service_account(env):
    e = env("serviceaccount")
    e.client.create("Namespace", {"metadata": {"name": "team-a"}})

    def accounts(ns):
        return [o["metadata"]["name"] for o in e.client.objects("ServiceAccount")
                if o["metadata"].get("namespace") == ns]  # fmt: skip

    e.wait(lambda: accounts("team-a") == ["default"])
    e.client.delete("ServiceAccount", "default", "team-a")
    e.wait(lambda: accounts("team-a") == ["default"])  # put back
