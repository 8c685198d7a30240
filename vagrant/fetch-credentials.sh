#!/usr/bin/env bash
# Run on the host, from anywhere: copy the control plane's join token, CA
# certificate and admin credential out of the controlplane VM into
# vagrant/.cluster/. Needed only when the synced folder is one-way (rsync);
# with a two-way folder the controlplane VM writes them there itself.
set -euo pipefail

cd "$(dirname "$0")"
mkdir -p .cluster
chmod 700 .cluster

fetch() {  # fetch REMOTE_PATH LOCAL_NAME
    local tmp=".cluster/$2.tmp"
    vagrant ssh controlplane --no-tty -c "sudo cat /var/lib/skiff/controlplane/$1" > "$tmp"
    if [ ! -s "$tmp" ]; then
        rm -f "$tmp"
        echo "fetch-credentials.sh: $1 is empty or missing on the controlplane VM" >&2
        exit 1
    fi
    chmod 600 "$tmp"
    mv -f "$tmp" ".cluster/$2"
}

fetch pki/ca.crt ca.crt
fetch admin.conf admin.conf
fetch join-token join-token
fetch kubeconfig kubeconfig
echo "credentials in $(pwd)/.cluster; now: KUBECONFIG=$(pwd)/.cluster/kubeconfig kubectl get nodes"
