#!/usr/bin/env bash
# Join this VM to the cluster: wait for the control plane's join token and CA
# in the synced folder, then start the runtime and the agent.
# Usage: node.sh NODE_NAME NODE_IP CONTROL_PLANE_IP:PORT
# With SKIFF_REGISTRY_MIRROR set (a URL), the runtime pulls docker.io images
# from that registry only (for a cluster without internet access).
# SKIFF_CNI_BACKEND: host-gw (default) or vxlan, how pod subnets cross VMs.
set -euo pipefail

USAGE="usage: node.sh NODE_NAME NODE_IP CONTROL_PLANE_IP:PORT"
NAME=${1:?$USAGE}
IP=${2:?$USAGE}
CP=${3:?$USAGE}
case "$CP" in
    *:*) ;;
    *) CP="$CP:6443" ;;  # an address without a port: the default port
esac
IN=${SKIFF_SYNCED:-/skiff}/vagrant/.cluster
BACKEND=${SKIFF_CNI_BACKEND:-host-gw}
case "$BACKEND" in
    host-gw|vxlan) ;;
    *) echo "node.sh: SKIFF_CNI_BACKEND=$BACKEND: want host-gw or vxlan" >&2; exit 1 ;;
esac
WAIT=${SKIFF_JOIN_WAIT:-900}

# The control-plane VM may still be provisioning (providers bring VMs up in
# parallel): wait for its credentials.
for _ in $(seq 1 "$WAIT"); do
    if [ -s "$IN/join-token" ] && [ -s "$IN/ca.crt" ]; then
        break
    fi
    sleep 1
done
if [ ! -s "$IN/join-token" ]; then
    echo "node.sh: no join token in $IN after $WAIT s; is the controlplane VM up?" >&2
    exit 1
fi

install -m 0644 "$IN/ca.crt" /etc/skiff/ca.crt
TOKEN=$(tr -d '[:space:]' < "$IN/join-token")
umask 077
cat > /etc/skiff/agent.env <<CONF
SKIFF_SERVER=$CP
SKIFF_JOIN_TOKEN=$TOKEN
SKIFF_NODE_NAME=$NAME
SKIFF_NODE_IP=$IP
SKIFF_CNI_BACKEND=$BACKEND
CONF

if [ -n "${SKIFF_REGISTRY_MIRROR:-}" ]; then
    umask 022
    cat > /etc/skiff/registries.yaml <<CONF
mirrors:
  "docker.io":
    endpoint: ["$SKIFF_REGISTRY_MIRROR"]
disable_default_endpoint: true
CONF
fi

systemctl enable skiff-runtime.service skiff-agent.service
# restart, not start: re-provisioning picks up new code and a new token
# (containers outlive a runtime restart: the unit kills only the main process).
systemctl restart skiff-runtime.service skiff-agent.service
echo "node.sh: $NAME ($IP) joining $CP, pod network over $BACKEND"
