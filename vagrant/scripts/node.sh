#!/usr/bin/env bash
# Join this VM to the cluster: wait for the control plane's join token and CA
# in the synced folder, then start the runtime and the agent.
# Usage: node.sh NODE_NAME NODE_IP CONTROL_PLANE_IP
set -euo pipefail

NAME=${1:?usage: node.sh NODE_NAME NODE_IP CONTROL_PLANE_IP}
IP=${2:?usage: node.sh NODE_NAME NODE_IP CONTROL_PLANE_IP}
CP=${3:?usage: node.sh NODE_NAME NODE_IP CONTROL_PLANE_IP}
IN=${SKIFF_SYNCED:-/skiff}/vagrant/.cluster
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
SKIFF_SERVER=$CP:6443
SKIFF_JOIN_TOKEN=$TOKEN
SKIFF_NODE_NAME=$NAME
SKIFF_NODE_IP=$IP
CONF

systemctl enable skiff-runtime.service skiff-agent.service
# restart, not start: re-provisioning picks up new code and a new token
# (containers outlive a runtime restart: the unit kills only the main process).
systemctl restart skiff-runtime.service skiff-agent.service
echo "node.sh: $NAME ($IP) joining $CP:6443"
