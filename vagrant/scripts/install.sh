#!/usr/bin/env bash
# Install skiff from the synced folder (/skiff) into /opt/skiff/src with the
# same steps as `make up` — the Makefile's `deps` and `venv` targets (without
# the dev tools) — then
# the skiff systemd units. Idempotent: re-running updates the copy and the venv.
# Never writes into /skiff (it is the host's working tree).
set -euo pipefail

SRC=${SKIFF_SYNCED:-/skiff}
DEST=${SKIFF_PREFIX:-/opt/skiff}/src

if [ ! -f "$SRC/Makefile" ]; then
    echo "install.sh: $SRC does not hold the skiff repository (synced folder missing?)" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
if ! command -v make >/dev/null; then
    apt-get update -qq
    apt-get install -y -qq make
fi

# A copy without the host's virtualenv, caches and VCS data: the VM builds its
# own venv, and nothing the VM writes ends up in the host's tree.
mkdir -p "$DEST"
tar -C "$SRC" \
    --exclude=./.git --exclude=./.venv --exclude='*.egg-info' --exclude=__pycache__ \
    --exclude=./.mypy_cache --exclude=./.ruff_cache --exclude=./.pytest_cache \
    --exclude=./vagrant/.vagrant --exclude=./vagrant/.cluster \
    -cf - . | tar -C "$DEST" -xf -

# The VM runs skiff, it does not develop it: no dev tools in its venv (they
# cost minutes to unpack under software emulation).
make -C "$DEST" deps venv EXTRAS=

# Kernel settings a node needs (pod routing, service rules on bridged traffic).
modprobe br_netfilter 2>/dev/null || true
modprobe overlay 2>/dev/null || true
cat > /etc/sysctl.d/90-skiff.conf <<'CONF'
net.ipv4.ip_forward = 1
net.bridge.bridge-nf-call-iptables = 1
CONF
printf 'br_netfilter\noverlay\n' > /etc/modules-load.d/skiff.conf
sysctl -q --system || true

install -d -m 0755 /etc/skiff /var/lib/skiff /var/log/skiff
install -m 0644 "$SRC"/vagrant/systemd/skiff-*.service /etc/systemd/system/
ln -sf "$DEST/.venv/bin/skiffctl" /usr/local/bin/skiffctl
ln -sf "$DEST/.venv/bin/skiff" /usr/local/bin/skiff
systemctl daemon-reload
echo "install.sh: skiff installed in $DEST"
