"""Run a command in a pod's container on this node, through the node's CRI
runtime, possibly several times; print the outputs as one JSON list.

Runs inside a node VM (`vagrant ssh`/ssh, from /opt/skiff/src), where the
VM test's host side cannot reach the runtime's socket. One call does a batch
(`repeat`), because each ssh round trip into a VM under TCG costs seconds.

    python -m tests.vm.podexec '{"pod": "web-x", "cmd": ["wget", ...], "repeat": 3}'
"""

from __future__ import annotations

import json
import sys

from agent.cri_client import CRIClient

SOCKET = "unix:///run/skiff/cri.sock"
RUNNING = 1  # CONTAINER_RUNNING


def main(argv: list[str]) -> int:
    req = json.loads(argv[0])
    labels = {
        "io.kubernetes.pod.name": req["pod"],
        "io.kubernetes.pod.namespace": req.get("namespace", "default"),
    }
    client = CRIClient(SOCKET, timeout=30)
    try:
        running = [c for c in client.list_containers(labels) if c.state == RUNNING]
        if not running:
            sys.stderr.write(f"no running container of {req['pod']} on this node\n")
            return 2
        outs = []
        for _ in range(int(req.get("repeat", 1))):
            resp = client.exec_sync(running[0].id, req["cmd"], int(req.get("timeout", 10)))
            if resp.exit_code != 0:
                err = resp.stderr.decode(errors="replace")
                sys.stderr.write(f"{req['cmd']} exited {resp.exit_code}: {err}\n")
                return 1
            outs.append(resp.stdout.decode(errors="replace").strip())
    finally:
        client.close()
    print(json.dumps(outs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
