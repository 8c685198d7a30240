#!/usr/bin/env bash
# Run on the host, from anywhere, once the controlplane VM is up: copy out of
# it (over `vagrant ssh`, never through the synced folder) what the nodes and
# the host need.
#
# - vagrant/.cluster/{ca.crt,join-token}: all a node gets (the nodes read them
#   through the read-only synced folder; with rsync, `vagrant rsync` them).
# - $SKIFF_ADMIN_DIR/kubeconfig (default ~/.skiff/vagrant, outside the synced
#   tree, 0600): the admin's kubeconfig for the host, made here from the
#   admin token, the API address and the CA the VM reports, each checked
#   against its format. The VM's own kubeconfig is never copied: a file a VM
#   wrote is never used as it is on the host (a kubeconfig can name commands
#   to run).
set -euo pipefail

cd "$(dirname "$0")"
ADMIN_DIR=${SKIFF_ADMIN_DIR:-$HOME/.skiff/vagrant}
OUT=${SKIFF_CLUSTER_DIR:-.cluster}  # the nodes' inputs: vagrant/.cluster
umask 077
mkdir -p "$OUT" "$ADMIN_DIR"
chmod 700 "$ADMIN_DIR"
chmod 755 "$OUT"

remote() {  # remote PATH: the file's content on the controlplane VM
    vagrant ssh controlplane --no-tty -c "sudo cat /var/lib/skiff/controlplane/$1"
}

fail() {
    echo "fetch-credentials.sh: $*" >&2
    exit 1
}

CA=$(remote pki/ca.crt)
[[ $CA =~ ^-----BEGIN\ CERTIFICATE-----$'\n'[A-Za-z0-9+/=$'\n']+-----END\ CERTIFICATE-----$ ]] ||
    fail "pki/ca.crt is not one PEM certificate"
TOKEN=$(remote join-token | tr -d '[:space:]')
[[ $TOKEN =~ ^[a-z0-9]{6}\.[a-z0-9]{16}$ ]] || fail "join-token is not a bootstrap token"
KUBECONFIG_TEXT=$(remote kubeconfig)
ADMIN=$(printf '%s\n' "$KUBECONFIG_TEXT" | sed -n 's/^ *token: *//p' | head -n 1)
[[ $ADMIN =~ ^skiff-admin\.[0-9a-f]{40}$ ]] || fail "the admin token has not the admin's format"
SERVER=$(printf '%s\n' "$KUBECONFIG_TEXT" | sed -n 's/^ *server: *//p' | head -n 1)
[[ $SERVER =~ ^https://[0-9.]+:[0-9]+$ ]] || fail "the API address $SERVER is not https://IP:PORT"

printf '%s\n' "$CA" > "$OUT/ca.crt.tmp"
chmod 644 "$OUT/ca.crt.tmp"
mv -f "$OUT/ca.crt.tmp" "$OUT/ca.crt"
printf '%s\n' "$TOKEN" > "$OUT/join-token.tmp"
chmod 644 "$OUT/join-token.tmp"  # the nodes read it through the synced folder
mv -f "$OUT/join-token.tmp" "$OUT/join-token"

CA_DATA=$(printf '%s\n' "$CA" | base64 -w0)
cat > "$ADMIN_DIR/kubeconfig.tmp" <<CONF
apiVersion: v1
kind: Config
clusters:
- name: skiff
  cluster:
    server: $SERVER
    certificate-authority-data: $CA_DATA
    tls-server-name: skiff-apiserver
users:
- name: admin
  user:
    token: $ADMIN
contexts:
- name: skiff
  context: {cluster: skiff, user: admin}
current-context: skiff
CONF
mv -f "$ADMIN_DIR/kubeconfig.tmp" "$ADMIN_DIR/kubeconfig"
echo "node credentials in $OUT; the admin's: KUBECONFIG=$ADMIN_DIR/kubeconfig kubectl get nodes"
