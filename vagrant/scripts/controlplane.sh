#!/usr/bin/env bash
# Start the control plane on this VM. Its credentials (join token, CA
# certificate, admin credential, kubeconfig) stay on this VM, under
# /var/lib/skiff/controlplane and for root; the host copies out what it needs
# with fetch-credentials.sh (over `vagrant ssh`), and nothing is written into
# the synced folder (/skiff is read-only: it is the host's working tree).
# Usage: controlplane.sh ADVERTISE_IP [PORT [NODE_GRACE]]
# (NODE_GRACE: seconds without a node heartbeat before the node is NotReady.)
set -euo pipefail

IP=${1:?usage: controlplane.sh ADVERTISE_IP [PORT [NODE_GRACE]]}
PORT=${2:-6443}
GRACE=${3:-40}
DATA=/var/lib/skiff/controlplane
WAIT=${SKIFF_CP_WAIT:-600}  # seconds; a VM under software emulation (TCG) starts slowly

cat > /etc/skiff/controlplane.env <<CONF
SKIFF_ADVERTISE_ADDRESS=$IP
SKIFF_API_PORT=$PORT
SKIFF_NODE_GRACE=$GRACE
CONF

systemctl enable skiff-controlplane.service
systemctl restart skiff-controlplane.service  # re-provisioning picks up new code

# The control plane writes its credentials once it serves.
for _ in $(seq 1 "$WAIT"); do
    if [ -s "$DATA/join-token" ] && [ -s "$DATA/admin.conf" ] && [ -s "$DATA/pki/ca.crt" ]; then
        break
    fi
    sleep 1
done
if [ ! -s "$DATA/join-token" ]; then
    echo "controlplane.sh: no join token after $WAIT s; see journalctl -u skiff-controlplane" >&2
    exit 1
fi

install -m 0600 "$DATA/admin.conf" /etc/skiff/admin.conf
install -d -m 0700 /root/.kube
install -m 0600 "$DATA/kubeconfig" /root/.kube/config
echo "controlplane.sh: serving on $IP:$PORT (Kubernetes REST and gRPC); on the host," \
     "run vagrant/fetch-credentials.sh before bringing up the nodes"
