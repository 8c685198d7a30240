#!/usr/bin/env bash
# Start the control plane on this VM and publish what nodes and the host need
# (join token, CA certificate, admin credential, kubeconfig) in the synced folder:
# /skiff/vagrant/.cluster/. Usage: controlplane.sh ADVERTISE_IP [PORT [NODE_GRACE]]
# (NODE_GRACE: seconds without a node heartbeat before the node is NotReady.)
set -euo pipefail

IP=${1:?usage: controlplane.sh ADVERTISE_IP [PORT [NODE_GRACE]]}
PORT=${2:-6443}
GRACE=${3:-40}
DATA=/var/lib/skiff/controlplane
OUT=${SKIFF_SYNCED:-/skiff}/vagrant/.cluster
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

mkdir -p "$OUT"
# Write each file under a temporary name, then rename, so a node never reads
# half a file.
install -m 0600 "$DATA/join-token" "$OUT/join-token.tmp"
install -m 0644 "$DATA/pki/ca.crt" "$OUT/ca.crt.tmp"
install -m 0600 "$DATA/admin.conf" "$OUT/admin.conf.tmp"
install -m 0600 "$DATA/kubeconfig" "$OUT/kubeconfig.tmp"
mv -f "$OUT/ca.crt.tmp" "$OUT/ca.crt"
mv -f "$OUT/admin.conf.tmp" "$OUT/admin.conf"
mv -f "$OUT/kubeconfig.tmp" "$OUT/kubeconfig"
mv -f "$OUT/join-token.tmp" "$OUT/join-token"
install -m 0600 "$DATA/admin.conf" /etc/skiff/admin.conf
install -d -m 0700 /root/.kube
install -m 0600 "$DATA/kubeconfig" /root/.kube/config
echo "controlplane.sh: serving on $IP:$PORT (Kubernetes REST and gRPC); credentials in $OUT"
