"""The extension points cost nothing until used: a `skiff controlplane` at
rest has not mapped the CEL engine (cel-cpp's shared objects, ~19 MB
resident); its first ValidatingAdmissionPolicy loads it, and the policy
then judges requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from controlplane.client.errors import ApiError
from tests.harness.controlplane import ControlPlane
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.slow]


def _cel_mapped(pid: int) -> bool:
    return "cel_expr_python" in Path(f"/proc/{pid}/maps").read_text()


def test_the_engine_loads_with_the_first_policy(tmp_path: Path) -> None:
    cp = ControlPlane(tmp_path / "cp").start()
    try:
        assert cp.proc is not None
        pid = cp.proc.pid
        client = cp.client()
        client.create("ConfigMap", {"metadata": {"name": "before"}, "data": {"a": "b"}}, "default")
        assert not _cel_mapped(pid)
        rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                  "resources": ["configmaps"]}]  # fmt: skip
        client.create("ValidatingAdmissionPolicy", {"metadata": {"name": "needs-owner"}, "spec": {
            "matchConstraints": {"resourceRules": rules},
            "validations": [{"expression": "'owner' in object.data",
                             "message": "needs an owner"}]}})  # fmt: skip
        assert _cel_mapped(pid)  # compiled when written
        client.create("ValidatingAdmissionPolicyBinding", {"metadata": {"name": "needs-owner"},
                      "spec": {"policyName": "needs-owner", "validationActions": ["Deny"]}})  # fmt: skip

        def refused() -> bool:
            try:
                client.create("ConfigMap", {"metadata": {"name": "after"}, "data": {"a": "b"}},
                              "default")  # fmt: skip
            except ApiError as err:
                assert "needs an owner" in str(err)
                return True
            client.delete("ConfigMap", "after", "default")
            return False

        wait_for(refused, 10, message="the policy in force")
    finally:
        cp.close()
